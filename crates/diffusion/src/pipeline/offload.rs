//! A denoiser whose weights may move to host memory while the VAE decodes (`LoadOptions::
//! denoiser_offload`) and come back for the next image's steps. Every family's pipeline holds its
//! UNet or transformer in one of these.

use std::sync::{Mutex, MutexGuard};

use burn::module::Module;
use burn::DispatchDevice;

use crate::device::SelectedDevice;
use crate::pipeline::B;

pub(crate) struct Offloadable<M> {
    slot: Mutex<Slot<M>>,
}

pub(crate) struct Slot<M> {
    pub module: M,
    on_host: bool,
}

impl<M: Module<B>> Offloadable<M> {
    pub fn new(module: M) -> Self {
        Offloadable {
            slot: Mutex::new(Slot {
                module,
                on_host: false,
            }),
        }
    }

    /// The module where it is now.
    pub fn lock(&self) -> MutexGuard<'_, Slot<M>> {
        // A panic elsewhere while it was held leaves the weights as they were: still usable.
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The module, back on `device` if `offload` moved it to host memory.
    pub fn on_device(&self, device: &SelectedDevice) -> MutexGuard<'_, Slot<M>> {
        let mut slot = self.lock();
        if slot.on_host {
            slot.module = slot.module.clone().to_device(&device.device);
            slot.on_host = false;
        }
        slot
    }

    /// Moves the weights to host memory (`cpu`, the CPU backend), freeing the device's copy.
    /// Nothing moves when the pipeline runs on the CPU.
    pub fn offload(&self, device: &SelectedDevice, cpu: &DispatchDevice) {
        if device.kind == crate::device::BackendKind::Cpu {
            return;
        }
        let mut slot = self.lock();
        if !slot.on_host {
            slot.module = slot.module.clone().to_device(cpu);
            slot.on_host = true;
        }
    }
}
