//! The Python interpreter: which file it is, and what it needs to read. Asked once in
//! `Sandbox::new`, outside the sandbox (the interpreter is trusted; the programs are not).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::SandboxError;

/// What the sandbox must let the interpreter read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Interpreter {
    /// The file `execve` runs (absolute, as configured or found on `PATH`).
    pub path: PathBuf,
    /// `major.minor.micro`.
    pub version: String,
    /// `sys.prefix`, `sys.exec_prefix`, `sys.base_prefix`, `sys.base_exec_prefix` and the
    /// directory of the resolved executable, without repeats.
    pub dirs: Vec<PathBuf>,
    /// Files outside those directories that start-up reads: the resolved `sitecustomize`
    /// (Debian links it to `/etc/python3.X/sitecustomize.py`).
    pub files: Vec<PathBuf>,
}

/// The interpreter file: `configured` (a path, or a name looked up on `PATH`), else
/// `/usr/bin/python3` when it exists, else `python3` on `PATH`.
pub(crate) fn resolve(configured: Option<&Path>) -> Result<PathBuf, SandboxError> {
    let wanted = match configured {
        Some(p) => p.to_path_buf(),
        None if Path::new("/usr/bin/python3").exists() => PathBuf::from("/usr/bin/python3"),
        None => PathBuf::from("python3"),
    };
    let unavailable = |why: String| SandboxError::Unavailable {
        what: "the Python interpreter",
        why,
    };
    if wanted.as_os_str().is_empty() {
        return Err(unavailable("`python` is empty".into()));
    }
    let path = if wanted.components().count() > 1 || wanted.is_absolute() {
        if wanted.is_absolute() {
            wanted
        } else {
            std::env::current_dir()
                .map_err(|e| crate::io_err("reading the current directory", e))?
                .join(wanted)
        }
    } else {
        let path_var = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path_var)
            .map(|d| d.join(&wanted))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                unavailable(format!(
                    "`{}` is not on PATH ({}); set `python` to the interpreter's path, e.g. \
                     \"/usr/bin/python3\"",
                    wanted.display(),
                    std::env::var("PATH").unwrap_or_default()
                ))
            })?
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(unavailable(format!("{} is not a file", path.display()))),
        Err(e) => Err(unavailable(format!("{}: {e}", path.display()))),
    }
}

/// The probe script: NUL-separated fields.
const QUERY: &str = "import sys, os, importlib.util\n\
def real(p):\n    return os.path.realpath(p) if p else ''\n\
try:\n    s = importlib.util.find_spec('sitecustomize')\n    site = real(s.origin) if s and s.origin else ''\n\
except Exception:\n    site = ''\n\
v = '%d.%d.%d' % sys.version_info[:3]\n\
sys.stdout.write('\\0'.join([v, sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, real(sys.executable), site]))\n";

/// Asks the interpreter (unsandboxed, with a clean environment, at most 30 s) for its version,
/// prefixes and start-up files.
pub(crate) fn query(path: &Path) -> Result<Interpreter, SandboxError> {
    let unavailable = |why: String| SandboxError::Unavailable {
        what: "the Python interpreter",
        why,
    };
    let mut child = Command::new(path)
        .args(["-B", "-s", "-c", QUERY])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| unavailable(format!("running {}: {e}", path.display())))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(unavailable(format!(
                    "{} did not answer within 30 s",
                    path.display()
                )));
            }
            Err(e) => return Err(crate::io_err(format!("waiting for {}", path.display()), e)),
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    let fields: Vec<&str> = out.split('\0').collect();
    if !status.success() || fields.len() != 7 {
        return Err(unavailable(format!(
            "{} is not a working Python 3 ({status}): {}",
            path.display(),
            err.trim()
        )));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    let exe_dir = Path::new(fields[5]).parent().map(Path::to_path_buf);
    for d in fields[1..5]
        .iter()
        .map(PathBuf::from)
        .chain(exe_dir)
        .filter(|p| p.is_absolute())
    {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let files = match fields[6] {
        "" => Vec::new(),
        site => {
            let site = PathBuf::from(site);
            if dirs.iter().any(|d| site.starts_with(d)) {
                Vec::new()
            } else {
                vec![site]
            }
        }
    };
    Ok(Interpreter {
        path: path.to_path_buf(),
        version: fields[0].to_string(),
        dirs,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_debians_python_and_its_prefix_is_usr() {
        let p = resolve(None).unwrap();
        assert_eq!(p, PathBuf::from("/usr/bin/python3"));
        let i = query(&p).unwrap();
        assert!(i.version.starts_with("3."), "{i:?}");
        assert!(i.dirs.contains(&PathBuf::from("/usr")), "{i:?}");
        assert!(i.dirs.contains(&PathBuf::from("/usr/bin")), "{i:?}");
    }

    #[test]
    fn a_missing_interpreter_is_unavailable_and_named() {
        let e = resolve(Some(Path::new("/nonexistent/python9"))).unwrap_err();
        assert!(matches!(e, SandboxError::Unavailable { .. }));
        assert!(e.to_string().contains("/nonexistent/python9"), "{e}");
        let e = resolve(Some(Path::new("no-such-python-xyz"))).unwrap_err();
        assert!(e.to_string().contains("no-such-python-xyz"), "{e}");
    }
}
