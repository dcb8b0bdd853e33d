//! [`Device::all`]: every usable device of this process, for a [`Batcher`](crate::Batcher)
//! spread over several ([`Batcher::spread`](crate::Batcher::spread)).
//!
//! CUDA numbers a machine's GPUs `0 .. cuDeviceGetCount`; each one that opens is a device. A
//! machine without one has the Host device alone, with the reason, as [`Device::detect`]
//! gives it; `GMPRT_DEVICE` forces the same choices as there (`host`, `simulated`: that device
//! alone; `cuda`: every GPU, an error without one).
use crate::device::DEVICE_ENV;
use crate::{Device, OffloadError};

impl Device {
    /// Every usable device (module doc): on a machine with N GPUs, `cuda:0 .. cuda:N-1` that
    /// open; without one, `[Host]` with the reason (or the device `GMPRT_DEVICE` forces).
    /// `Err` as [`Device::detect`]: a bad `GMPRT_DEVICE`, or `cuda` forced without a GPU.
    ///
    /// ```
    /// use gmprt_offload::{Device, DeviceKind};
    ///
    /// let all = Device::all().unwrap();
    /// assert!(!all.is_empty());
    /// // Either GPUs only, or one stand-in that says why.
    /// if all[0].kind() != DeviceKind::Cuda {
    ///     assert_eq!(all.len(), 1);
    /// }
    /// assert!(all.iter().skip(1).all(|d| d.kind() == DeviceKind::Cuda));
    /// ```
    pub fn all() -> Result<Vec<Device>, OffloadError> {
        let choice = std::env::var(DEVICE_ENV).ok().map(|c| c.trim().to_ascii_lowercase());
        match choice.as_deref() {
            None | Some("") | Some("auto") | Some("cuda") => {
                let first = Device::from_choice(choice.as_deref())?;
                if first.kind() != crate::DeviceKind::Cuda {
                    return Ok(vec![first]);
                }
                let mut all = vec![first];
                // Past the last GPU the probe says "not present"; a GPU that is present but
                // does not open ends the list too, and is named on stderr rather than hidden.
                while crate::cuda::probe(all.len()).is_ok() {
                    match Device::cuda(all.len()) {
                        Ok(d) => all.push(d),
                        Err(e) => {
                            eprintln!(
                                "gmprt: cuda:{} is present but does not open ({e}); using the first {}",
                                all.len(),
                                all.len()
                            );
                            break;
                        }
                    }
                }
                Ok(all)
            }
            _ => Ok(vec![Device::from_choice(choice.as_deref())?]),
        }
    }
}
