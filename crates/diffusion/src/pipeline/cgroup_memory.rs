//! The memory a Linux control group (cgroup v1 or v2) leaves this process: a container's limit,
//! which the system's available memory does not show (a container on a 64 GB host with an 8 GB
//! limit is killed at 8).

use std::io::Read;
use std::path::{Path, PathBuf};

/// Where Linux mounts the cgroup hierarchies.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Limits at or above this are "no limit" (cgroup v1 writes the largest page-aligned i64).
const NO_LIMIT: u64 = 1 << 62;

/// What the cgroups of this process (`membership`: /proc/self/cgroup's text) and their ancestors
/// leave it under `root`: over each level that sets a memory limit, the limit less what the group
/// holds that cannot be reclaimed (its usage less its inactive file pages), the smallest. `None`
/// where no level sets a limit or the files cannot be read.
pub fn available(root: &Path, membership: &str) -> Option<u64> {
    let (base, own, version) = own_group(root, membership)?;
    let mut least: Option<u64> = None;
    let mut dir = own.as_path();
    loop {
        if let Some(room) = room(dir, version) {
            least = Some(least.map_or(room, |l| l.min(room)));
        }
        if dir == base {
            break;
        }
        match dir.parent() {
            Some(parent) if parent.starts_with(&base) => dir = parent,
            _ => break,
        }
    }
    least
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    V1,
    V2,
}

/// The memory hierarchy's mount under `root`, this process's group in it, and its version: v1's
/// `memory` controller where the process has one (`4:memory:/path`), else the unified v2 group
/// (`0::/path`).
fn own_group(root: &Path, membership: &str) -> Option<(PathBuf, PathBuf, Version)> {
    let mut v2 = None;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim().trim_start_matches('/');
        if relative.split('/').any(|part| part == "..") {
            continue;
        }
        if controllers.split(',').any(|c| c == "memory") {
            let base = root.join("memory");
            let own = base.join(relative);
            return Some((base, own, Version::V1));
        }
        if id == "0" && controllers.is_empty() {
            v2 = Some((root.to_path_buf(), root.join(relative), Version::V2));
        }
    }
    v2
}

/// The room one group's limit leaves, `None` where it sets no limit.
fn room(dir: &Path, version: Version) -> Option<u64> {
    let (limit, usage, stat, inactive) = match version {
        Version::V1 => (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "memory.stat",
            "total_inactive_file",
        ),
        Version::V2 => (
            "memory.max",
            "memory.current",
            "memory.stat",
            "inactive_file",
        ),
    };
    // v2 writes "max" for no limit: it does not parse, as no limit.
    let limit = read_number(&dir.join(limit)).filter(|&l| l < NO_LIMIT)?;
    let usage = read_number(&dir.join(usage))?;
    let inactive = read_small(&dir.join(stat))
        .and_then(|text| stat_value(&text, inactive))
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

/// `key`'s value in a memory.stat text ("key value" lines).
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read_number(path: &Path) -> Option<u64> {
    read_small(path)?.trim().parse().ok()
}

/// A cgroup file's text: small, so at most 64 KiB of it.
fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 << 10)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn write(dir: &Path, files: &[(&str, String)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    /// A v2 group of 8 GiB holding 6 GiB, 2 of them inactive file pages: 4 GiB left; its parent's
    /// 5 GiB limit with 3 GiB held leaves 2, the smaller; "max" sets no limit.
    #[test]
    fn a_v2_limit_leaves_its_room_and_an_ancestors_smaller_room_wins() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("system.slice/app.scope");
        let stat = |inactive: u64| format!("anon 1\ninactive_file {inactive}\nactive_file 0\n");
        write(
            &own,
            &[
                ("memory.max", format!("{}\n", 8 * GIB)),
                ("memory.current", format!("{}\n", 6 * GIB)),
                ("memory.stat", stat(2 * GIB)),
            ],
        );
        let membership = "0::/system.slice/app.scope\n";
        assert_eq!(available(root.path(), membership), Some(4 * GIB));
        write(
            &root.path().join("system.slice"),
            &[
                ("memory.max", format!("{}\n", 5 * GIB)),
                ("memory.current", format!("{}\n", 3 * GIB)),
                ("memory.stat", stat(0)),
            ],
        );
        assert_eq!(available(root.path(), membership), Some(2 * GIB));
        write(&own, &[("memory.max", "max\n".into())]);
        write(
            &root.path().join("system.slice"),
            &[("memory.max", "max\n".into())],
        );
        assert_eq!(available(root.path(), membership), None);
    }

    /// v1's memory controller line wins over the unified one; its "no limit" (the largest
    /// page-aligned i64) sets none; a path that climbs out of the hierarchy is not followed.
    #[test]
    fn a_v1_memory_controller_is_read_and_its_unlimited_value_is_no_limit() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("memory/docker/abc");
        write(
            &own,
            &[
                ("memory.limit_in_bytes", format!("{}\n", 4 * GIB)),
                ("memory.usage_in_bytes", format!("{}\n", 3 * GIB)),
                (
                    "memory.stat",
                    format!("rss 5\ntotal_inactive_file {}\n", GIB),
                ),
            ],
        );
        let membership = "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/docker/abc\n";
        assert_eq!(available(root.path(), membership), Some(2 * GIB));
        write(
            &own,
            &[("memory.limit_in_bytes", "9223372036854771712\n".into())],
        );
        assert_eq!(available(root.path(), membership), None);
        assert_eq!(available(root.path(), "4:memory:/../../etc\n"), None);
        assert_eq!(available(root.path(), "not a cgroup line\n"), None);
        assert_eq!(available(root.path(), ""), None);
    }
}
