//! Apple silicon GPU power through IOReport, the framework behind `powermetrics`: the "Energy Model"
//! group's "GPU Energy" channel counts the energy the GPU used between two samples, without root.
//! IOReport gives the energy between samples; their running sum is an energy counter like the
//! other vendors', turned into power by `EnergyTracker`. The framework calls exist only on macOS;
//! the unit handling is plain Rust, tested on every platform.

/// The IOReport channel group and channel that count the GPU's energy.
pub const ENERGY_GROUP: &str = "Energy Model";
pub const GPU_CHANNEL: &str = "GPU Energy";

/// An IOReport energy value in joules, by the channel's unit label; `None` for a unit that is not
/// an energy.
pub fn joules(value: i64, unit: &str) -> Option<f64> {
    let scale = match unit.trim() {
        "J" => 1.0,
        "mJ" => 1e-3,
        "uJ" | "µJ" => 1e-6,
        "nJ" => 1e-9,
        _ => return None,
    };
    Some(value as f64 * scale)
}

#[cfg(target_os = "macos")]
pub use source::AppleGpuSource;

#[cfg(target_os = "macos")]
mod source {
    use std::ffi::{c_char, c_void, CStr};
    use std::ptr::{null, null_mut};
    use std::time::Instant;

    use super::{joules, ENERGY_GROUP, GPU_CHANNEL};
    use crate::reading::{EnergyTracker, Reading, Source, SourceInfo, Vendor};

    type CFTypeRef = *const c_void;
    type CFIndex = isize;
    const UTF8: u32 = 0x0800_0100; // kCFStringEncodingUTF8

    #[link(name = "CoreFoundation", kind = "framework")]
    extern "C" {
        fn CFStringCreateWithBytes(
            alloc: CFTypeRef,
            bytes: *const u8,
            len: CFIndex,
            encoding: u32,
            external: u8,
        ) -> CFTypeRef;
        fn CFStringGetCString(s: CFTypeRef, buf: *mut c_char, size: CFIndex, encoding: u32) -> u8;
        fn CFDictionaryGetValue(dict: CFTypeRef, key: CFTypeRef) -> CFTypeRef;
        fn CFDictionaryGetCount(dict: CFTypeRef) -> CFIndex;
        fn CFDictionaryCreateMutableCopy(
            alloc: CFTypeRef,
            capacity: CFIndex,
            dict: CFTypeRef,
        ) -> *mut c_void;
        fn CFArrayGetCount(array: CFTypeRef) -> CFIndex;
        fn CFArrayGetValueAtIndex(array: CFTypeRef, index: CFIndex) -> CFTypeRef;
        fn CFRelease(object: CFTypeRef);
    }

    // libIOReport has no public header; these are the signatures powermetrics-style tools use.
    #[link(name = "IOReport", kind = "dylib")]
    extern "C" {
        fn IOReportCopyChannelsInGroup(
            group: CFTypeRef,
            subgroup: CFTypeRef,
            a: u64,
            b: u64,
            c: u64,
        ) -> CFTypeRef;
        fn IOReportCreateSubscription(
            a: *const c_void,
            channels: *mut c_void,
            subscribed: *mut *mut c_void,
            id: u64,
            b: CFTypeRef,
        ) -> CFTypeRef;
        fn IOReportCreateSamples(
            subscription: CFTypeRef,
            channels: *mut c_void,
            a: CFTypeRef,
        ) -> CFTypeRef;
        fn IOReportCreateSamplesDelta(
            previous: CFTypeRef,
            current: CFTypeRef,
            a: CFTypeRef,
        ) -> CFTypeRef;
        fn IOReportChannelGetGroup(item: CFTypeRef) -> CFTypeRef;
        fn IOReportChannelGetChannelName(item: CFTypeRef) -> CFTypeRef;
        fn IOReportChannelGetUnitLabel(item: CFTypeRef) -> CFTypeRef;
        fn IOReportSimpleGetIntegerValue(item: CFTypeRef, index: i32) -> i64;
    }

    /// A CoreFoundation object this code owns (created or copied), released on drop.
    struct Owned(CFTypeRef);

    impl Owned {
        fn new(object: CFTypeRef) -> Option<Owned> {
            (!object.is_null()).then_some(Owned(object))
        }
    }

    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: the object is non-null and owned by this value alone.
            unsafe { CFRelease(self.0) }
        }
    }

    fn cf_string(text: &str) -> Option<Owned> {
        // SAFETY: the bytes are valid UTF-8 of the given length; CF copies them.
        Owned::new(unsafe {
            CFStringCreateWithBytes(null(), text.as_ptr(), text.len() as CFIndex, UTF8, 0)
        })
    }

    fn rust_string(s: CFTypeRef) -> String {
        if s.is_null() {
            return String::new();
        }
        let mut buf = [0 as c_char; 256];
        // SAFETY: `s` is a CFString; the buffer's size is passed.
        let ok = unsafe { CFStringGetCString(s, buf.as_mut_ptr(), buf.len() as CFIndex, UTF8) };
        if ok == 0 {
            return String::new();
        }
        // SAFETY: CFStringGetCString wrote a NUL-terminated string into `buf`.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    /// The GPU energy in a delta sample, in joules; `None` when the channel is missing or its
    /// unit unknown.
    fn gpu_joules(delta: &Owned) -> Option<f64> {
        let key = cf_string("IOReportChannels")?;
        // SAFETY: `delta` is a CFDictionary; the value under this key is a CFArray of channel
        // dictionaries that the dictionary keeps alive.
        let items = unsafe { CFDictionaryGetValue(delta.0, key.0) };
        if items.is_null() {
            return None;
        }
        let mut total = None;
        for i in 0..unsafe { CFArrayGetCount(items) } {
            // SAFETY: `i` is within the array; items are channel dictionaries.
            let item = unsafe { CFArrayGetValueAtIndex(items, i) };
            let group = rust_string(unsafe { IOReportChannelGetGroup(item) });
            let channel = rust_string(unsafe { IOReportChannelGetChannelName(item) });
            if group != ENERGY_GROUP || channel != GPU_CHANNEL {
                continue;
            }
            let unit = rust_string(unsafe { IOReportChannelGetUnitLabel(item) });
            let value = unsafe { IOReportSimpleGetIntegerValue(item, 0) };
            *total.get_or_insert(0.0) += joules(value, &unit)?;
        }
        total
    }

    pub struct AppleGpuSource {
        info: SourceInfo,
        channels: Owned,
        subscription: Owned,
        previous: Option<Owned>,
        /// The GPU energy summed over all samples so far.
        total_j: f64,
        tracker: EnergyTracker,
    }

    // SAFETY: the CF objects are used by one thread at a time (the sampler's), never shared.
    unsafe impl Send for AppleGpuSource {}

    impl AppleGpuSource {
        pub fn open() -> Result<AppleGpuSource, String> {
            let group = cf_string(ENERGY_GROUP).ok_or("cannot make a CFString")?;
            // SAFETY: plain calls with valid CF objects; each result is checked for null and
            // owned by exactly one `Owned`.
            let channels = unsafe {
                let found = Owned::new(IOReportCopyChannelsInGroup(group.0, null(), 0, 0, 0))
                    .ok_or("IOReport has no \"Energy Model\" channel group on this Mac")?;
                let count = CFDictionaryGetCount(found.0);
                Owned::new(CFDictionaryCreateMutableCopy(null(), count, found.0))
                    .ok_or("cannot copy IOReport's channel list")?
            };
            let mut subscribed: *mut c_void = null_mut();
            let subscription = Owned::new(unsafe {
                IOReportCreateSubscription(
                    null(),
                    channels.0 as *mut c_void,
                    &mut subscribed,
                    0,
                    null(),
                )
            })
            .ok_or("IOReport refused a subscription to its Energy Model channels")?;
            // `subscribed` (the channels actually subscribed) is not used; its ownership is
            // undocumented, so it is left alone rather than released.
            let mut source = AppleGpuSource {
                info: SourceInfo {
                    id: "ioreport:gpu".into(),
                    vendor: Vendor::Apple,
                    device: "Apple GPU".into(),
                    method: "IOReport \"Energy Model\" / \"GPU Energy\" channel".into(),
                    pci_bus: None,
                },
                channels,
                subscription,
                previous: None,
                total_j: 0.0,
                tracker: EnergyTracker::default(),
            };
            // Two samples must show the GPU channel (Intel Macs have none).
            source.sample();
            let second = source.sample();
            if second.is_none() {
                return Err(
                    "IOReport's Energy Model group has no \"GPU Energy\" channel on this Mac (Apple silicon reports it; Intel Macs do not)"
                        .into(),
                );
            }
            Ok(source)
        }

        /// A new sample, and the GPU energy since the previous one.
        fn sample(&mut self) -> Option<f64> {
            // SAFETY: the subscription and channel list live as long as `self`.
            let current = Owned::new(unsafe {
                IOReportCreateSamples(self.subscription.0, self.channels.0 as *mut c_void, null())
            })?;
            let delta = self.previous.as_ref().and_then(|previous| {
                // SAFETY: both are IOReport samples from this subscription.
                Owned::new(unsafe { IOReportCreateSamplesDelta(previous.0, current.0, null()) })
            });
            self.previous = Some(current);
            gpu_joules(&delta?)
        }
    }

    impl Source for AppleGpuSource {
        fn info(&self) -> &SourceInfo {
            &self.info
        }

        fn read(&mut self) -> Reading {
            let Some(delta) = self.sample().filter(|d| d.is_finite() && *d >= 0.0) else {
                return Reading::default();
            };
            self.total_j += delta;
            let (energy, power) = self.tracker.update(Instant::now(), self.total_j, None);
            Reading {
                energy_j: Some(energy),
                power_w: power,
                ..Reading::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_to_joules() {
        assert_eq!(joules(1500, "mJ"), Some(1.5));
        assert_eq!(joules(2_000_000, " uJ "), Some(2.0));
        assert_eq!(joules(3_000_000_000, "nJ"), Some(3.0));
        assert_eq!(joules(7, "J"), Some(7.0));
        assert_eq!(joules(10, "ms"), None);
    }
}
