// The subgroups extension, for kernels that exchange registers between the lanes of a subgroup
// (common/gemm_subgroup.wgsl). A directive must come before every declaration of the module: this file is
// the first of such a kernel's includes. Only devices created with the `subgroups` feature compile it.
enable subgroups;
