//! CUDA device through cudarc (dynamic loading). STUB: the CUDA helper fills this in.

/// What a [`Job`](crate::Job) gets to enqueue its launch on a CUDA slot. STUB.
pub struct LaunchCtx<'a> {
    _p: std::marker::PhantomData<&'a ()>,
}
