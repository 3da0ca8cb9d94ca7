//! What a replica's cgroup (`/plateau/<container>`, made by runc) says it
//! used: CPU time and memory in use, from cgroup v2 (`cpu.stat`
//! `usage_usec`, `memory.current`) or, on a host with cgroup v1
//! hierarchies, `cpuacct.usage` (nanoseconds) and
//! `memory.usage_in_bytes`. A cgroup that cannot be read counts 0.

use std::path::{Path, PathBuf};

/// Where cgroup hierarchies are mounted.
const ROOT: &str = "/sys/fs/cgroup";

/// What a cgroup used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Used {
    /// CPU time since the cgroup was made, in microseconds.
    pub cpu_usec: u64,
    /// Memory in use now, in bytes.
    pub memory_bytes: u64,
}

/// What container `id`'s cgroup used.
pub fn read(id: &str) -> Used {
    read_under(Path::new(ROOT), id)
}

fn read_under(root: &Path, id: &str) -> Used {
    let unified = root.join("plateau").join(id);
    if root.join("cgroup.controllers").exists() {
        return Used {
            cpu_usec: std::fs::read_to_string(unified.join("cpu.stat"))
                .ok()
                .and_then(|s| stat_value(&s, "usage_usec"))
                .unwrap_or(0),
            memory_bytes: number(&unified.join("memory.current")),
        };
    }
    let v1 = |controllers: &[&str], file: &str| -> u64 {
        controllers
            .iter()
            .map(|c| root.join(c).join("plateau").join(id).join(file))
            .find(|p| p.exists())
            .map_or(0, |p| number(&p))
    };
    Used {
        cpu_usec: v1(&["cpuacct", "cpu,cpuacct", "cpuacct,cpu"], "cpuacct.usage") / 1000,
        memory_bytes: v1(&["memory"], "memory.usage_in_bytes"),
    }
}

/// The value of `key` in a flat-keyed cgroup file (`key value` lines).
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
}

fn number(path: &PathBuf) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cgroup_v2_and_v1_layouts() {
        let v2 = tempfile::tempdir().unwrap();
        std::fs::write(v2.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        let dir = v2.path().join("plateau/web-1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpu.stat"), "usage_usec 1500\nuser_usec 1000\n").unwrap();
        std::fs::write(dir.join("memory.current"), "4096\n").unwrap();
        let used = read_under(v2.path(), "web-1");
        assert_eq!((used.cpu_usec, used.memory_bytes), (1500, 4096));

        let v1 = tempfile::tempdir().unwrap();
        let cpu = v1.path().join("cpu,cpuacct/plateau/web-1");
        let memory = v1.path().join("memory/plateau/web-1");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::create_dir_all(&memory).unwrap();
        std::fs::write(cpu.join("cpuacct.usage"), "2000000\n").unwrap();
        std::fs::write(memory.join("memory.usage_in_bytes"), "8192\n").unwrap();
        let used = read_under(v1.path(), "web-1");
        assert_eq!((used.cpu_usec, used.memory_bytes), (2000, 8192));
        assert_eq!(read_under(v1.path(), "gone"), Used::default());
    }
}
