//! STUB: filled in by the offload helper.
