//! The sector-size check (Oracle's ORA-01378): reads a destination's logical and physical block
//! sizes and refuses a redo block size the device cannot write without read-modify-write tricks.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where a destination's sector sizes came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SectorSizes {
    /// Logical block size in bytes (the smallest unit the device addresses), when known.
    pub logical: Option<u32>,
    /// Physical block size in bytes (what the device writes atomically), when known.
    pub physical: Option<u32>,
    /// How they were found: `ioctl` (a block device), `sysfs:<path>`, or why they are unknown.
    pub source: String,
}

/// Reads the sector sizes for a log file at `path` (a block device, or a file whose directory is
/// on one). `sysfs` is normally `/sys`; tests pass a fake tree.
pub fn detect(path: &Path, sysfs: &Path) -> SectorSizes {
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.file_type().is_block_device() {
            return match std::fs::File::open(path).and_then(|f| super::sys::block_device_sizes(&f))
            {
                Ok((l, p)) => SectorSizes {
                    logical: Some(l),
                    physical: Some(p),
                    source: "ioctl BLKSSZGET/BLKPBSZGET".into(),
                },
                Err(e) => unknown(format!("ioctl on the block device failed: {e}")),
            };
        }
    }
    // A file: the device holding its directory (the file may not exist yet).
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    let dev = match std::fs::metadata(&probe) {
        Ok(m) => m.dev(),
        Err(e) => return unknown(format!("cannot stat {}: {e}", probe.display())),
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return unknown(format!(
            "{} is on a file system without a block device (device {major}:{minor}, e.g. tmpfs)",
            probe.display()
        ));
    }
    let dev_dir = sysfs.join(format!("dev/block/{major}:{minor}"));
    // A partition has no queue/ of its own: its parent device's applies.
    for queue in [dev_dir.join("queue"), dev_dir.join("../queue")] {
        let read = |f: &str| -> Option<u32> {
            std::fs::read_to_string(queue.join(f))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        if let Some(logical) = read("logical_block_size") {
            return SectorSizes {
                logical: Some(logical),
                physical: read("physical_block_size"),
                source: format!("sysfs:{}", queue.display()),
            };
        }
    }
    unknown(format!(
        "no {} for device {major}:{minor}",
        dev_dir.join("queue").display()
    ))
}

fn unknown(why: String) -> SectorSizes {
    SectorSizes {
        logical: None,
        physical: None,
        source: why,
    }
}

/// What the check concluded for one destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Fine as it is.
    Ok,
    /// Proceed, but say this (block below the physical sector size, or an override in force).
    Warn(String),
    /// Refuse, with this message.
    Refuse(String),
}

/// Checks `block_size` against the sizes of the destination `path` with Oracle's rule for redo
/// block sizes (ORA-01378; Administrator's Guide, "Planning the Block Size of Redo Log Files"): the
/// block must be at least the logical (host) sector size, a multiple of it, and at most the
/// physical (media) sector size. So a 4096-byte block is refused on a disk of 512-byte sectors
/// (512n, the case both seeds hit) but allowed on a 512e disk (512 logical, 4096 physical), where
/// a 512-byte block is allowed too with a warning: each write of a partial physical sector costs
/// a read-modify-write. An unknown physical size counts as the logical one. `override_check`
/// (like `_disk_sector_size_override`) turns a refusal into a warning, except for a misaligned
/// block with O_DIRECT, where the kernel itself would refuse the writes.
pub fn check(
    path: &Path,
    sizes: &SectorSizes,
    block_size: usize,
    direct: bool,
    override_check: bool,
) -> Verdict {
    let Some(logical) = sizes.logical.filter(|&l| l > 0) else {
        return Verdict::Ok;
    };
    let logical = logical as usize;
    let physical = sizes.physical.map_or(logical, |p| p as usize).max(logical);
    let misaligned = block_size < logical || !block_size.is_multiple_of(logical);
    if misaligned || block_size > physical {
        // The nearest size the rule allows.
        let allowed = if block_size < logical {
            logical
        } else {
            physical
        };
        let msg = format!(
            "{}: the redo block size ({block_size}) is not compatible with the device's sector \
             sizes (logical {logical}, physical {}): it must be at least the logical sector size, \
             a multiple of it, and at most the physical one (cf. ORA-01378); use --block-size \
             {allowed}",
            path.display(),
            physical_text(sizes, physical),
        );
        if misaligned && direct {
            return Verdict::Refuse(format!(
                "{msg}; with --sync direct-dsync the kernel refuses writes that are not \
                 sector-aligned, so --sector-size-override does not apply"
            ));
        }
        if !override_check {
            return Verdict::Refuse(format!(
                "{msg}, or --sector-size-override to proceed anyway"
            ));
        }
        return Verdict::Warn(format!(
            "{msg}; proceeding because of --sector-size-override"
        ));
    }
    if block_size < physical {
        return Verdict::Warn(format!(
            "{}: redo block size {block_size} is below the device's physical sector size \
             {physical} (logical {logical}): each write of a partial sector costs a \
             read-modify-write",
            path.display()
        ));
    }
    Verdict::Ok
}

/// The physical size as known, or said to be taken as the logical one.
fn physical_text(sizes: &SectorSizes, physical: usize) -> String {
    match sizes.physical {
        Some(_) => physical.to_string(),
        None => format!("unknown, taken as {physical}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(l: u32, p: u32) -> SectorSizes {
        SectorSizes {
            logical: Some(l),
            physical: Some(p),
            source: "test".into(),
        }
    }

    #[test]
    fn refuses_and_overrides_like_ora_01378() {
        let p = Path::new("/x/redo.log");
        let Verdict::Refuse(m) = check(p, &sizes(4096, 4096), 512, false, false) else {
            panic!("512 on a 4096 device must be refused")
        };
        assert!(
            m.contains("/x/redo.log") && m.contains("512") && m.contains("4096"),
            "{m}"
        );
        assert!(m.contains("--sector-size-override"), "{m}");
        assert!(matches!(
            check(p, &sizes(4096, 4096), 512, false, true),
            Verdict::Warn(_)
        ));
        assert!(matches!(
            check(p, &sizes(4096, 4096), 512, true, true),
            Verdict::Refuse(_)
        ));
        assert_eq!(check(p, &sizes(4096, 4096), 4096, true, false), Verdict::Ok);
        // Issue 13: a block larger than the sector is refused too (below).
        assert_eq!(
            check(p, &sizes(1024, 1024), 1024, false, false),
            Verdict::Ok
        );
        let Verdict::Warn(w) = check(p, &sizes(512, 4096), 512, false, false) else {
            panic!("512 below a 4096 physical sector must warn")
        };
        assert!(w.contains("read-modify-write"), "{w}");
        let unknown = SectorSizes {
            logical: None,
            physical: None,
            source: "tmpfs".into(),
        };
        assert_eq!(check(p, &unknown, 512, false, false), Verdict::Ok);
    }

    #[test]
    fn issue_13_a_block_larger_than_the_sector_is_refused_like_oracle() {
        let p = Path::new("/x/redo.log");
        // The seeds' case: a 4096-byte block on a disk of 512-byte sectors.
        let Verdict::Refuse(m) = check(p, &sizes(512, 512), 4096, false, false) else {
            panic!("4096 on a 512 device must be refused")
        };
        assert!(
            m.contains("redo block size (4096)") && m.contains("(logical 512, physical 512)"),
            "{m}"
        );
        assert!(
            m.contains("ORA-01378") && m.contains("--sector-size-override"),
            "{m}"
        );
        assert!(matches!(
            check(p, &sizes(512, 512), 1024, false, false),
            Verdict::Refuse(_)
        ));
        // The override proceeds, O_DIRECT included: the writes are sector-aligned.
        assert!(matches!(
            check(p, &sizes(512, 512), 4096, true, true),
            Verdict::Warn(_)
        ));
        assert_eq!(check(p, &sizes(512, 512), 512, false, false), Verdict::Ok);
    }

    #[test]
    fn issue_34_a_512e_disk_takes_both_block_sizes_as_oracle_does() {
        let p = Path::new("/x/redo.log");
        // 512e: 512 logical, 4096 physical. Oracle allows 4096 (the recommended size) and 512.
        assert_eq!(check(p, &sizes(512, 4096), 4096, false, false), Verdict::Ok);
        assert_eq!(check(p, &sizes(512, 4096), 4096, true, false), Verdict::Ok);
        let Verdict::Warn(w) = check(p, &sizes(512, 4096), 512, false, false) else {
            panic!("512 on 512e is allowed with a warning")
        };
        assert!(w.contains("physical sector size 4096 (logical 512)"), "{w}");
        assert!(matches!(
            check(p, &sizes(512, 4096), 1024, false, false),
            Verdict::Warn(_)
        ));
        // Above the physical size, even on 512e; below the logical size on 4Kn.
        let Verdict::Refuse(m) = check(p, &sizes(512, 4096), 8192, false, false) else {
            panic!("8192 above the physical sector must be refused")
        };
        assert!(m.contains("(logical 512, physical 4096)"), "{m}");
        assert!(m.contains("use --block-size 4096"), "{m}");
        let Verdict::Refuse(m) = check(p, &sizes(4096, 4096), 512, false, false) else {
            panic!("512 on 4Kn must be refused")
        };
        assert!(m.contains("use --block-size 4096"), "{m}");
        // An unknown physical size is taken as the logical one, and said so.
        let half = SectorSizes {
            logical: Some(512),
            physical: None,
            source: "test".into(),
        };
        let Verdict::Refuse(m) = check(p, &half, 4096, false, false) else {
            panic!("4096 with only a 512 logical size known must be refused")
        };
        assert!(m.contains("physical unknown, taken as 512"), "{m}");
    }

    #[test]
    fn reads_a_fake_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        let dev = std::fs::metadata(dir.path()).unwrap().dev();
        let (ma, mi) = (libc::major(dev), libc::minor(dev));
        let root = dir.path().join("sys");
        let q = root.join(format!("dev/block/{ma}:{mi}/queue"));
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("logical_block_size"), "4096\n").unwrap();
        std::fs::write(q.join("physical_block_size"), "4096\n").unwrap();
        let s = detect(&dir.path().join("redo.log"), &root);
        if ma == 0 {
            // A temp dir on tmpfs has no block device: the sizes are unknown, and say why.
            assert_eq!(s.logical, None, "{s:?}");
        } else {
            assert_eq!((s.logical, s.physical), (Some(4096), Some(4096)), "{s:?}");
        }
    }
}
