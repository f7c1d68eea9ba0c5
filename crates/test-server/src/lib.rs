//! A loopback HTTP/1.1 server for tests. It serves fake Hub repositories the way
//! huggingface.co does (the `?blobs=true` model API, `resolve` downloads with byte ranges) and
//! records POSTed results, and it can misbehave on purpose: drop a connection part-way through a
//! file, corrupt a file, answer errors, or go away entirely.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use sha1::Digest as _;

/// A file in a fake repository. `lfs` files are listed with a sha256 like the Hub's LFS files.
#[derive(Clone)]
pub struct RepoFile {
    pub path: String,
    pub bytes: Vec<u8>,
    pub lfs: bool,
}

#[derive(Clone)]
pub struct FakeRepo {
    pub id: String,
    pub commit: String,
    pub files: Vec<RepoFile>,
    /// The model card's `license`, as the Hub's API reports it (`cardData.license`).
    pub license: Option<String>,
}

impl FakeRepo {
    /// Every file under `root` (weights, `.safetensors`, as LFS files), as repository `id`.
    pub fn from_folder(
        id: &str,
        commit: &str,
        root: &std::path::Path,
    ) -> std::io::Result<FakeRepo> {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push(RepoFile {
                    lfs: rel.ends_with(".safetensors"),
                    bytes: std::fs::read(&path)?,
                    path: rel,
                });
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(FakeRepo {
            id: id.into(),
            commit: commit.into(),
            files,
            license: None,
        })
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

#[derive(Default)]
struct State {
    repos: Vec<FakeRepo>,
    requests: Vec<Request>,
    /// (file path, bytes): the next download of that file stops after that many bytes.
    drops: Vec<(String, usize)>,
    /// Files served with their first byte flipped.
    corrupt: Vec<String>,
    /// Answer this many POSTs with 503 before accepting.
    post_failures: usize,
    /// Accepted POST bodies.
    posted: Vec<Vec<u8>>,
    /// Plain files served at a path (e.g. an update manifest).
    files: Vec<(String, Vec<u8>)>,
}

pub struct TestServer {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("address");
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let st = st.clone();
                    thread::spawn(move || {
                        let _ = serve(stream, &st);
                    });
                }
            }
        });
        TestServer { addr, state, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn add_repo(&self, repo: FakeRepo) {
        self.state.lock().unwrap().repos.push(repo);
    }

    /// Serves `bytes` at `path` (e.g. `/latest.json`).
    pub fn add_file(&self, path: &str, bytes: &[u8]) {
        self.state
            .lock()
            .unwrap()
            .files
            .push((path.into(), bytes.to_vec()));
    }

    /// The next download of `path` sends only `bytes` bytes, then closes the connection.
    pub fn drop_next_download(&self, path: &str, bytes: usize) {
        self.state
            .lock()
            .unwrap()
            .drops
            .push((path.to_string(), bytes));
    }

    pub fn corrupt(&self, path: &str) {
        self.state.lock().unwrap().corrupt.push(path.to_string());
    }

    pub fn fail_posts(&self, count: usize) {
        self.state.lock().unwrap().post_failures = count;
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Each file download (`resolve`) the server saw: its path and its Range header.
    pub fn downloads(&self) -> Vec<(String, Option<String>)> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.contains("/resolve/"))
            .map(|r| (r.path, r.headers.get("range").cloned()))
            .collect()
    }

    pub fn posted(&self) -> Vec<Vec<u8>> {
        self.state.lock().unwrap().posted.clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn listing(repo: &FakeRepo) -> String {
    let siblings: Vec<serde_json::Value> = repo
        .files
        .iter()
        .map(|f| {
            let mut git = sha1::Sha1::new();
            git.update(format!("blob {}\0", f.bytes.len()).as_bytes());
            git.update(&f.bytes);
            let mut entry = serde_json::json!({
                "rfilename": f.path,
                "size": f.bytes.len(),
                "blobId": hex(&git.finalize()),
            });
            if f.lfs {
                entry["lfs"] = serde_json::json!({
                    "sha256": hex(&sha2::Sha256::digest(&f.bytes)),
                    "size": f.bytes.len(),
                    "pointerSize": 134,
                });
            }
            entry
        })
        .collect();
    let mut model = serde_json::json!({ "id": repo.id, "sha": repo.commit, "siblings": siblings });
    if let Some(license) = &repo.license {
        model["cardData"] = serde_json::json!({ "license": license });
        model["tags"] = serde_json::json!([format!("license:{license}")]);
    }
    model.to_string()
}

fn serve(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let request = Request {
            method,
            path,
            headers,
            body,
        };
        state.lock().unwrap().requests.push(request.clone());
        if !respond(&request, state, &mut out)? {
            return Ok(());
        }
    }
}

/// Writes the answer; returns false when the connection is to be closed.
fn respond(request: &Request, state: &Mutex<State>, out: &mut TcpStream) -> std::io::Result<bool> {
    if request.method == "POST" {
        let mut st = state.lock().unwrap();
        if st.post_failures > 0 {
            st.post_failures -= 1;
            drop(st);
            send(out, "503 Service Unavailable", "", b"busy")?;
        } else {
            st.posted.push(request.body.clone());
            drop(st);
            send(
                out,
                "201 Created",
                "Content-Type: application/json\r\n",
                br#"{"ok":true}"#,
            )?;
        }
        return Ok(true);
    }
    let path = request.path.split('?').next().unwrap_or("");
    let file = {
        let st = state.lock().unwrap();
        st.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
    };
    if let Some(bytes) = file {
        send(out, "200 OK", "Content-Type: application/json\r\n", &bytes)?;
        return Ok(true);
    }
    let repos = state.lock().unwrap().repos.clone();
    for repo in &repos {
        if let Some(rev) = path.strip_prefix(&format!("/api/models/{}/revision/", repo.id)) {
            if rev == "main" || rev == repo.commit {
                let body = listing(repo);
                send(
                    out,
                    "200 OK",
                    "Content-Type: application/json\r\n",
                    body.as_bytes(),
                )?;
                return Ok(true);
            }
        }
        if let Some(rest) = path.strip_prefix(&format!("/{}/resolve/", repo.id)) {
            let (rev, file) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(f) = repo.files.iter().find(|f| f.path == file) else {
                break;
            };
            if rev != "main" && rev != repo.commit {
                break;
            }
            return serve_file(request, state, out, f);
        }
    }
    send(out, "404 Not Found", "", b"not found")?;
    Ok(true)
}

/// One repository file, corrupted or cut short as the test asked, from the requested range on.
fn serve_file(
    request: &Request,
    state: &Mutex<State>,
    out: &mut TcpStream,
    f: &RepoFile,
) -> std::io::Result<bool> {
    let mut bytes = f.bytes.clone();
    let drop_after = {
        let mut st = state.lock().unwrap();
        if st.corrupt.contains(&f.path) && !bytes.is_empty() {
            bytes[0] ^= 0xff;
        }
        let at = st.drops.iter().position(|(p, _)| p == &f.path);
        at.map(|i| st.drops.remove(i).1)
    };
    let from = request
        .headers
        .get("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok());
    let (status, headers, body) = match from {
        Some(from) if from >= bytes.len() => {
            send(out, "416 Range Not Satisfiable", "", b"")?;
            return Ok(true);
        }
        Some(from) => (
            "206 Partial Content",
            format!(
                "Content-Range: bytes {from}-{}/{}\r\n",
                bytes.len() - 1,
                bytes.len()
            ),
            bytes[from..].to_vec(),
        ),
        None => ("200 OK", String::new(), bytes),
    };
    if let Some(cut) = drop_after {
        write!(
            out,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{headers}\r\n",
            body.len()
        )?;
        out.write_all(&body[..cut.min(body.len())])?;
        out.flush()?;
        out.shutdown(std::net::Shutdown::Both)?;
        return Ok(false);
    }
    send(out, status, &headers, &body)?;
    Ok(true)
}

fn send(out: &mut TcpStream, status: &str, headers: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    )?;
    out.write_all(body)?;
    out.flush()
}
