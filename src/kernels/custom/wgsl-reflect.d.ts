// wgsl_reflect's "main" is a CommonJS file inside a "type": "module" package, which Node refuses to load;
// its ES module build is imported by path (reflect.ts) and typed here from the package's own declarations.
declare module 'wgsl_reflect/wgsl_reflect.module.js' {
  export * from 'wgsl_reflect';
}
