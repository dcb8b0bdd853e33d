//! Per-stream resources of the one-shot operations: the utility stream and the cuBLAS handle
//! of each stream (one per stream: cuBLAS keeps its workspace per handle; see the parent
//! module's ordering protocol).
use super::*;

impl CudaBackend {
    /// The utility stream, created on first use.
    pub(crate) fn util_stream(&self) -> Result<Arc<CudaStream>, OffloadError> {
        let mut util = self.inner.util.lock();
        if let Some(s) = util.as_ref() {
            return Ok(s.clone());
        }
        self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let s = self.inner.ctx.new_stream().map_err(|e| driver_err("cuStreamCreate", e))?;
        *util = Some(s.clone());
        Ok(s)
    }

    /// Creates `stream`'s cuBLAS handle if it has none (timed into [`FirstUse`]). Call
    /// before recording any event of a timed run.
    pub(crate) fn ensure_blas(&self, stream: &Arc<CudaStream>) -> Result<(), OffloadError> {
        gemm::cublas_available()?;
        let key = stream.cu_stream() as usize;
        let mut handles = self.inner.blas.lock();
        if let Entry::Vacant(v) = handles.entry(key) {
            self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
            let t = Instant::now();
            let blas = CudaBlas::new(stream.clone())
                .map_err(|e| OffloadError::Driver { op: "cublasCreate".into(), msg: e.to_string() })?;
            let took = t.elapsed();
            v.insert(Arc::new(Mutex::new(blas)));
            let mut fu = self.inner.first_use.lock();
            fu.cublas_handle += took;
            fu.cublas_handles += 1;
        }
        Ok(())
    }
}
