//! Reading and writing float32 `.npy` files (NumPy's format, version 1-3, C order).

use std::path::Path;

use crate::error::{DiffusionError, Result};

/// A float32 array read from a `.npy` file.
#[derive(Debug)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

pub fn read_f32(path: &Path) -> Result<NpyArray> {
    let bytes = std::fs::read(path).map_err(|e| DiffusionError::io(path, e))?;
    parse_f32(&bytes, path)
}

/// A float32 array from a `.npy` file's bytes, every size checked against them before anything is
/// allocated; `path` names the file in errors.
pub fn parse_f32(bytes: &[u8], path: &Path) -> Result<NpyArray> {
    let bad = |problem: String| DiffusionError::Latents {
        path: path.to_path_buf(),
        problem,
    };
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (missing the \\x93NUMPY magic)".into()));
    }
    let (header_len, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(format!("unsupported .npy version {v}"))),
    };
    let header = bytes
        .get(start..start.saturating_add(header_len))
        .ok_or_else(|| bad("truncated .npy header".into()))?;
    let header =
        std::str::from_utf8(header).map_err(|_| bad("the .npy header is not text".into()))?;
    let field = |name: &str| -> Option<&str> {
        let at = header.find(&format!("'{name}'"))?;
        let rest = &header[at + name.len() + 2..];
        Some(rest.trim_start().strip_prefix(':')?.trim_start())
    };
    let descr = field("descr").ok_or_else(|| bad("the .npy header has no 'descr'".into()))?;
    if !(descr.starts_with("'<f4'") || descr.starts_with("'=f4'")) {
        let shown: String = descr.chars().take(8).collect();
        return Err(bad(format!(
            "holds dtype {shown}; float32 ('<f4') is required"
        )));
    }
    let fortran = field("fortran_order")
        .ok_or_else(|| bad("the .npy header has no 'fortran_order'".into()))?;
    if fortran.starts_with("True") {
        return Err(bad("is in Fortran order; save it in C order".into()));
    }
    let shape_text = field("shape").ok_or_else(|| bad("the .npy header has no 'shape'".into()))?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("malformed shape in the .npy header".into()))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| bad("malformed shape in the .npy header".into()))?;
    let needed = shape.iter().try_fold(4usize, |n, &d| n.checked_mul(d));
    let body = &bytes[start + header_len..];
    if needed != Some(body.len()) {
        return Err(bad(format!(
            "shape {shape:?} needs {} data bytes but the file has {}",
            needed.map_or("more than 2^64".to_string(), |n| n.to_string()),
            body.len()
        )));
    }
    let data = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(NpyArray { shape, data })
}

pub fn write_f32(path: &Path, shape: &[usize], data: &[f32]) -> std::io::Result<()> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        write_f32(
            &path,
            &[1, 4, 2, 3],
            &(0..24).map(|i| i as f32).collect::<Vec<_>>(),
        )
        .unwrap();
        let a = read_f32(&path).unwrap();
        assert_eq!(a.shape, vec![1, 4, 2, 3]);
        assert_eq!(a.data[23], 23.0);

        std::fs::write(&path, b"not numpy at all").unwrap();
        assert!(read_f32(&path)
            .unwrap_err()
            .to_string()
            .contains("not a .npy file"));
    }
}
