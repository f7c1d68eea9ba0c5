//! Moving bytes: one file's download into a blob (resumed with range requests, retried with
//! backoff, verified against the listing's checksum before it is renamed into place), the links
//! from a snapshot into blobs, and the HTTP errors people are shown.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::download::Hub;
use crate::error::{HubError, Result};
use crate::listing::RemoteFile;

impl Hub {
    /// Fetches one file into `blob`, resuming `{blob}.incomplete`, and returns the bytes fetched.
    pub(crate) fn fetch_blob(
        &self,
        url: &str,
        file: &RemoteFile,
        blob: &Path,
        cancelled: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64> {
        let partial = blob.with_file_name(format!("{}.incomplete", file.blob_id));
        let mut fetched = 0;
        let mut failures = 0;
        let mut delay = self.retry.first_delay;
        loop {
            if cancelled() {
                return Err(HubError::Cancelled);
            }
            let have = fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
            if have >= file.size {
                if have > file.size {
                    fs::remove_file(&partial).map_err(|e| HubError::io(&partial, e))?;
                    continue;
                }
                break;
            }
            let before = have;
            match self.fetch_range(url, &partial, have, file.size, cancelled, progress) {
                Ok(()) => {}
                Err(e) if is_retryable(&e) => {
                    let after = fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
                    fetched += after.saturating_sub(before);
                    // Only failures that made no progress count towards giving up.
                    if after > before {
                        failures = 0;
                        delay = self.retry.first_delay;
                    }
                    failures += 1;
                    if failures > self.retry.attempts {
                        return Err(e);
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(self.retry.max_delay);
                    continue;
                }
                Err(e) => return Err(e),
            }
            let after = fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
            fetched += after.saturating_sub(before);
        }
        if let Err(e) = verify(&partial, file) {
            // A corrupt partial file must not be resumed.
            let _ = fs::remove_file(&partial);
            return Err(e);
        }
        fs::rename(&partial, blob).map_err(|e| HubError::io(blob, e))?;
        Ok(fetched)
    }

    /// One request for the bytes from `from` on, appended to `partial`.
    fn fetch_range(
        &self,
        url: &str,
        partial: &Path,
        from: u64,
        size: u64,
        cancelled: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let mut request = self.get(url);
        if from > 0 {
            request = request.set("Range", &format!("bytes={from}-"));
        }
        let response = match request.call() {
            // The partial file is longer than the server's: start again.
            Err(ureq::Error::Status(416, _)) => {
                fs::remove_file(partial).map_err(|e| HubError::io(partial, e))?;
                return Err(HubError::Network {
                    url: url.into(),
                    reason: "range not satisfiable; restarting the file".into(),
                });
            }
            other => other.map_err(|e| http_error(url, e))?,
        };
        let resumed = response.status() == 206;
        if resumed {
            let range = response.header("Content-Range").unwrap_or("");
            if !range.starts_with(&format!("bytes {from}-")) {
                return Err(HubError::Network {
                    url: url.into(),
                    reason: format!("unexpected Content-Range `{range}`"),
                });
            }
        }
        let mut out = File::options()
            .create(true)
            .append(resumed)
            .write(true)
            .truncate(!resumed)
            .open(partial)
            .map_err(|e| HubError::io(partial, e))?;
        let mut written = if resumed { from } else { 0 };
        let mut reader = response.into_reader();
        let mut buffer = vec![0u8; 1 << 18];
        loop {
            if cancelled() {
                out.flush().map_err(|e| HubError::io(partial, e))?;
                return Err(HubError::Cancelled);
            }
            let n = reader.read(&mut buffer).map_err(|e| HubError::Network {
                url: url.into(),
                reason: format!("connection dropped after {written} of {size} bytes: {e}"),
            })?;
            if n == 0 {
                break;
            }
            out.write_all(&buffer[..n])
                .map_err(|e| HubError::io(partial, e))?;
            written += n as u64;
            progress(written);
        }
        out.sync_all().map_err(|e| HubError::io(partial, e))?;
        if written < size {
            return Err(HubError::Network {
                url: url.into(),
                reason: format!("connection closed after {written} of {size} bytes"),
            });
        }
        Ok(())
    }

    pub(crate) fn with_retries<T>(&self, mut call: impl FnMut() -> Result<T>) -> Result<T> {
        let mut delay = self.retry.first_delay;
        let mut failures = 0;
        loop {
            match call() {
                // Unreachable hosts are not retried here: a machine with no network at all should
                // reach the offline path without minutes of waiting.
                Err(e)
                    if is_retryable(&e)
                        && !matches!(e, HubError::Unreachable { .. })
                        && failures < self.retry.attempts =>
                {
                    failures += 1;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(self.retry.max_delay);
                }
                other => return other,
            }
        }
    }
}

pub(crate) fn is_retryable(e: &HubError) -> bool {
    match e {
        HubError::Network { .. } | HubError::Unreachable { .. } => true,
        HubError::Http { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

pub(crate) fn http_error(url: &str, e: ureq::Error) -> HubError {
    match e {
        ureq::Error::Status(status, _) => {
            let hint = match status {
                401 | 403 => "the repository is gated or private: accept its terms on the Hub and set HF_TOKEN".to_string(),
                404 => "no such repository, revision or file".to_string(),
                429 => "rate limited by the Hub".to_string(),
                s if s >= 500 => "the server had an error".to_string(),
                _ => "unexpected answer".to_string(),
            };
            HubError::Http {
                url: url.into(),
                status,
                hint,
            }
        }
        ureq::Error::Transport(t) => {
            // ureq's own text starts with the URL, which the error names already.
            let reason = match t.url() {
                Some(url) => {
                    let text = t.to_string();
                    let prefix = format!("{url}: ");
                    text.strip_prefix(&prefix)
                        .map(str::to_string)
                        .unwrap_or(text)
                }
                None => t.to_string(),
            };
            match t.kind() {
                ureq::ErrorKind::Dns | ureq::ErrorKind::ConnectionFailed => HubError::Unreachable {
                    url: url.into(),
                    reason,
                },
                _ => HubError::Network {
                    url: url.into(),
                    reason,
                },
            }
        }
    }
}

/// Whether `bytes` are the listing's `file` (its size and checksum, as `verify` checks a file).
pub(crate) fn matches_listing(bytes: &[u8], file: &RemoteFile) -> bool {
    if bytes.len() as u64 != file.size {
        return false;
    }
    let (expected, actual) = match &file.sha256 {
        Some(sha) => (sha, hex(&sha2::Sha256::digest(bytes))),
        None => {
            let mut git = sha1::Sha1::new();
            git.update(format!("blob {}\0", bytes.len()).as_bytes());
            git.update(bytes);
            (&file.blob_id, hex(&git.finalize()))
        }
    };
    expected.eq_ignore_ascii_case(&actual)
}

/// Checks size and checksum: sha256 for LFS files, the git blob id (sha1) for the others.
fn verify(path: &Path, file: &RemoteFile) -> Result<()> {
    let len = fs::metadata(path).map_err(|e| HubError::io(path, e))?.len();
    let (expected, actual) = match &file.sha256 {
        Some(sha) => (sha.clone(), hash_file(sha2::Sha256::new(), path)?),
        None => {
            let mut git = sha1::Sha1::new();
            git.update(format!("blob {len}\0").as_bytes());
            (file.blob_id.clone(), hash_file(git, path)?)
        }
    };
    if len != file.size || !expected.eq_ignore_ascii_case(&actual) {
        return Err(HubError::Checksum {
            file: file.path.clone(),
            expected: format!("{expected}, {} bytes", file.size),
            actual: format!("{actual}, {len} bytes"),
        });
    }
    Ok(())
}

/// Feeds the file's bytes into `hasher` and returns the digest in hex.
pub(crate) fn hash_file<D: sha2::Digest>(mut hasher: D, path: &Path) -> Result<String> {
    let mut input = File::open(path).map_err(|e| HubError::io(path, e))?;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buffer).map_err(|e| HubError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `snapshot/path` -> the blob, as a relative link like huggingface_hub makes (a copy where the
/// file system refuses links).
pub(crate) fn link_into_snapshot(blob: &Path, snapshot: &Path, path: &str) -> Result<()> {
    let target = snapshot.join(path);
    let parent = target.parent().expect("a file inside the snapshot");
    fs::create_dir_all(parent).map_err(|e| HubError::io(parent, e))?;
    if target.is_file()
        && fs::metadata(&target).map(|m| m.len()).ok() == fs::metadata(blob).map(|m| m.len()).ok()
    {
        return Ok(());
    }
    let _ = fs::remove_file(&target);
    let depth = path.split('/').count() + 1; // snapshots/{commit}/{path...}
    let mut relative = PathBuf::new();
    for _ in 0..depth {
        relative.push("..");
    }
    relative.push("blobs");
    relative.push(blob.file_name().expect("blob name"));
    if make_link(&relative, &target).is_err() {
        fs::copy(blob, &target).map_err(|e| HubError::io(&target, e))?;
    }
    Ok(())
}

#[cfg(unix)]
fn make_link(relative: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(relative, target)
}

#[cfg(windows)]
fn make_link(relative: &Path, target: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_file(relative, target)
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("sdbench-tmp");
    fs::write(&tmp, bytes).map_err(|e| HubError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| HubError::io(path, e))
}
