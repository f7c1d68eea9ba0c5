//! Text files from strangers (configs, indexes, tokenizer vocabularies), read only up to a bound
//! on their size: a damaged or hostile file, or a device file that never ends, is refused by name
//! before it fills the memory.

use std::io::Read;
use std::path::Path;

use crate::error::{DiffusionError, Result};

/// A JSON config, model index or sharded checkpoint's index: the largest real ones are a few
/// hundred KB (an index of thousands of tensors).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;
/// A tokenizer's vocabulary or merges: CLIP's are 1 MB, Qwen's 3 MB.
pub const MAX_VOCABULARY_BYTES: u64 = 64 << 20;

/// `path`'s text when it is at most `max` bytes; an error naming the file, its size and the bound
/// otherwise. The bound holds while reading too, for files whose size the system does not report
/// (pipes, devices).
pub fn read_bounded(path: &Path, max: u64) -> Result<String> {
    let file = std::fs::File::open(path).map_err(|e| DiffusionError::io(path, e))?;
    let too_large = |size: String| {
        DiffusionError::config(
            path,
            format!(
                "is {size} bytes, more than such a file can be ({max} bytes): it is not the file \
                 its name says, or it is damaged; download or copy the model again"
            ),
        )
    };
    let size = file
        .metadata()
        .map_err(|e| DiffusionError::io(path, e))?
        .len();
    if size > max {
        return Err(too_large(size.to_string()));
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| DiffusionError::io(path, e))?;
    if text.len() as u64 > max {
        return Err(too_large(format!("more than {max}")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_past_the_bound_are_refused_by_name_before_and_while_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        assert_eq!(read_bounded(&path, 8).unwrap(), "{\"a\": 1}");
        let err = read_bounded(&path, 7).unwrap_err().to_string();
        assert!(
            err.contains("config.json")
                && err.contains("is 8 bytes, more than such a file can be (7 bytes)"),
            "{err}"
        );
        // A device reports no size and never ends: the bound stops it.
        #[cfg(unix)]
        {
            let err = read_bounded(Path::new("/dev/zero"), 1024)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("/dev/zero") && err.contains("more than 1024"),
                "{err}"
            );
        }
        let missing = read_bounded(&dir.path().join("missing.json"), 8).unwrap_err();
        assert!(missing.to_string().contains("missing.json"), "{missing}");
    }
}
