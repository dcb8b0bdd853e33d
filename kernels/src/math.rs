//! Branch-free f32 approximations of exp, ln and the normal CDF/PDF that LLVM vectorises.
//! STUB: the kernels helper fills this in with documented max errors vs f64.
