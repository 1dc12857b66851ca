//! A small ext4 file system on a loop device, for tests of where the database's files are
//! (issue 34 item 7): a second block device whose `/proc/diskstats` row only the test writes to.
//!
//! Needs root and a kernel that lets this machine attach loop devices and mount them; where it
//! cannot, [`LoopFs::new`] says why and the test skips with that message. Dropping it unmounts
//! lazily (a server may still hold files there until the test binary exits) and detaches the
//! device, which the kernel frees once the last user is gone.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted loop-device file system.
pub struct LoopFs {
    base: PathBuf,
    mnt: PathBuf,
    dev: String,
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl LoopFs {
    /// Makes a 96 MiB image, attaches it to a free loop device, makes ext4 on it and mounts it
    /// on a directory every user may traverse. `Err` says why it cannot be done here.
    pub fn new(tag: &str) -> Result<LoopFs, String> {
        LoopFs::with_size(tag, 96 << 20)
    }

    /// [`LoopFs::new`] with an image of `bytes` (sparse: only what is written takes space).
    pub fn with_size(tag: &str, bytes: u64) -> Result<LoopFs, String> {
        let base = PathBuf::from(format!("/tmp/dbscope-loop-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let img = base.join("fs.img");
        let f = std::fs::File::create(&img).map_err(|e| e.to_string())?;
        f.set_len(bytes).map_err(|e| e.to_string())?;
        let dev = run(Command::new("losetup").args(["-f", "--show"]).arg(&img))?;
        let mnt = base.join("mnt");
        let fs = LoopFs {
            base,
            mnt: mnt.clone(),
            dev: dev.clone(),
        };
        run(Command::new("mkfs.ext4").args(["-q", "-F", &dev]))?;
        std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        run(Command::new("mount").arg(&dev).arg(&mnt))?;
        std::fs::set_permissions(&mnt, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        Ok(fs)
    }

    /// Where it is mounted.
    pub fn mount_point(&self) -> &Path {
        &self.mnt
    }

    /// The device's name in `/proc/diskstats` (`loop3`).
    pub fn device(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).output();
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).output();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
