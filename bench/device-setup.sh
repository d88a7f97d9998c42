#!/usr/bin/env bash
# Sourced at the start of a device call (tools/README.md, "Benchmarks on a real GPU"; carry .devpack and .gl):
# the Vulkan loader and glvnd libraries, Node at /tmp/node, Dawn's dawn.node unpacked, NVIDIA's Vulkan driver.
for f in .gl/*.deb .devpack/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SHADERS_DIR=$PWD/shaders
xz -dc .devpack/node.xz > /tmp/node && chmod +x /tmp/node
d=.devpack/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
