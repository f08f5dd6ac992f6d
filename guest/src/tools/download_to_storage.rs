//! `pve_download_to_storage`: `POST /nodes/{node}/storage/{storage}/
//! download-url`, the node fetching an ISO, a container template or a disk
//! image to import onto a storage, its checksum checked when given.
//!
//! Refused without writing, as Proxmox would refuse it (or fail the task)
//! after: a file name that does not fit the content, a checksum without
//! its algorithm (or of the wrong length), a storage that does not take
//! that content on the node, and a file that is already there.

use serde_json::Value;

use crate::action::{Prepared, action_input};
use crate::api::Pve;
use crate::arg::url::HttpUrl;
use crate::arg::{NodeName, StorageId, Text, choice, deserialize_from_json, fixed_schema, string};
use crate::error::{ToolError, quoted};
use crate::node_action::{self, NodeActionOutput};
use crate::path::ApiPath;
use crate::route::{Param, Route};
use crate::storages;
use crate::tool::{Annotations, Answer, Tool, write_tool};
use crate::write::{Method, WriteRequest};

choice! {
    /// What the file is, which decides where it goes on the storage.
    pub enum Content {
        /// An installation ISO (or .img).
        Iso = "iso",
        /// A container template.
        Vztmpl = "vztmpl",
        /// A disk image or OVA to import.
        Import = "import",
    }
}

choice! {
    /// The checksum's algorithm.
    pub enum Algorithm {
        /// MD5.
        Md5 = "md5",
        /// SHA-1.
        Sha1 = "sha1",
        /// SHA-224.
        Sha224 = "sha224",
        /// SHA-256.
        Sha256 = "sha256",
        /// SHA-384.
        Sha384 = "sha384",
        /// SHA-512.
        Sha512 = "sha512",
    }
}

impl Algorithm {
    /// Hex digits of its digest.
    fn hex_len(self) -> usize {
        match self {
            Algorithm::Md5 => 32,
            Algorithm::Sha1 => 40,
            Algorithm::Sha224 => 56,
            Algorithm::Sha256 => 64,
            Algorithm::Sha384 => 96,
            Algorithm::Sha512 => 128,
        }
    }
}

/// A file name on a storage: letters, digits, `.`, `_`, `+` and `-`,
/// not starting with a dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileName(pub String);

impl FileName {
    fn from_json(v: &Value) -> Result<Self, String> {
        let s = string(v, 255)?;
        let ok = !s.starts_with('.')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
        if !ok {
            return Err(format!(
                "{} is not a file name (letters, digits, '.', '_', '+' and '-'), e.g. \
                 \"debian-12.7.0-amd64-netinst.iso\"",
                quoted(s, 64)
            ));
        }
        Ok(FileName(s.to_owned()))
    }
}
deserialize_from_json!(FileName);
fixed_schema!(FileName, serde_json::json!({"type": "string"}));

action_input! {
    new:
    /// What to fetch, and where to.
    pub struct Input {
        /// Node that downloads
        node: NodeName,
        /// Target storage
        storage: StorageId,
        /// http(s) URL
        url: HttpUrl,
        /// What the file is
        content: Content,
        /// Name on the storage
        filename: FileName,
        /// Expected checksum, hex
        checksum: Option<Text<128>>,
        /// The checksum's algorithm
        checksum_algorithm: Option<Algorithm>,
    }
}

/// The tool.
pub static TOOL: Tool = write_tool! {
    name: "pve_download_to_storage",
    title: "Download a file to a storage",
    description: "Download an ISO, container template or image to import from a URL onto a \
        storage, its checksum checked if given.",
    annotations: Annotations::write(false, false),
    routes: &[Route::new(
        "POST",
        "/nodes/{node}/storage/{storage}/download-url",
        &[
            Param::arg("url"),
            Param::arg("content"),
            Param::arg("filename"),
            Param::arg("checksum"),
            Param::from("checksum-algorithm", "checksum_algorithm"),
        ],
    )],
    privileges: [
        "/storage/{storage}": "Datastore.Audit" | "Datastore.AllocateSpace",
        "/storage/{storage}": "Datastore.AllocateTemplate",
        // PVE 8.2+; Sys.Audit and Sys.Modify on / also do.
        "/nodes/{node}": "Sys.AccessNetwork" | "Sys.Modify",
    ],
    run: run,
};

/// The extensions Proxmox takes for each content.
fn extensions(content: Content) -> &'static [&'static str] {
    match content {
        Content::Iso => &[".iso", ".img"],
        Content::Vztmpl => &[".tar.gz", ".tar.xz", ".tar.zst", ".tar.bz2"],
        Content::Import => &[".ova", ".ovf", ".qcow2", ".raw", ".vmdk"],
    }
}

fn check_arguments(input: &Input) -> Result<(), ToolError> {
    let name = input.filename.0.to_ascii_lowercase();
    let allowed = extensions(input.content);
    if !allowed.iter().any(|e| name.ends_with(e)) {
        return Err(ToolError::field(
            "filename",
            format!(
                "{} does not end in {} as Proxmox wants for content {}",
                quoted(&input.filename.0, 64),
                allowed.join(", "),
                input.content.as_str()
            ),
        ));
    }
    match (&input.checksum, input.checksum_algorithm) {
        (Some(_), None) => Err(ToolError::field(
            "checksum_algorithm",
            "missing: a checksum needs its algorithm, e.g. \"sha256\"",
        )),
        (None, Some(_)) => Err(ToolError::field(
            "checksum",
            "missing: checksum_algorithm names the algorithm of a checksum, which is not given",
        )),
        (Some(sum), Some(algorithm)) => {
            let ok = sum.as_str().len() == algorithm.hex_len()
                && sum.as_str().bytes().all(|b| b.is_ascii_hexdigit());
            if ok {
                Ok(())
            } else {
                Err(ToolError::field(
                    "checksum",
                    format!(
                        "a {} checksum is {} hex digits; {} is not",
                        algorithm.as_str(),
                        algorithm.hex_len(),
                        quoted(sum.as_str(), 40)
                    ),
                ))
            }
        }
        (None, None) => Ok(()),
    }
}

fn run(pve: &mut dyn Pve, input: Input) -> Result<Answer<NodeActionOutput>, ToolError> {
    check_arguments(&input)?;
    let execution = input.execution();
    let (node, storage) = (input.node.as_str(), input.storage.as_str());
    let content = input.content.as_str();
    let what = match input.content {
        Content::Iso => "ISO images",
        Content::Vztmpl => "container templates",
        Content::Import => "images to import",
    };
    storages::require(pve, "storage", node, storage, content, what)?;
    let storage_path = ApiPath::new("nodes").seg(node).lit("storage").seg(storage);
    let volid = format!("{storage}:{content}/{}", input.filename.0);
    if storages::holds(pve, node, storage, content, &volid)? {
        return Err(ToolError::Precondition(format!(
            "{volid} is already on {storage}, and Proxmox does not overwrite it. Nothing was \
             sent. Use it as it is, pick another filename, or delete it first \
             (pve_delete_volume)."
        )));
    }
    let algorithm = input.checksum_algorithm.map(Algorithm::as_str);
    let request = WriteRequest::new(Method::Post, storage_path.lit("download-url"))
        .text("url", Some(input.url.as_str()))
        .text("content", Some(content))
        .text("filename", Some(&input.filename.0))
        .text("checksum", input.checksum.as_ref().map(Text::as_str))
        .text("checksum-algorithm", algorithm);
    let checked = algorithm
        .map(|a| format!(", its {a} checked before it is kept"))
        .unwrap_or_else(|| ", with no checksum to check".into());
    let prepared = Prepared::Act {
        request,
        effect: format!(
            "node {node} downloads {} to {volid}{checked}",
            quoted(input.url.as_str(), 120)
        ),
    };
    let found = format!("{storage} on {node} takes {what} and has no {volid}");
    node_action::run(pve, node, found, prepared, execution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::fake::FakePve;
    use crate::tool::testing::assert_valid_output;
    use serde_json::json;

    const UPID: &str = "UPID:pve1:0000A1B2:00C3D4E5:67E12345:download:x.iso:mcp@pve!ops:";
    const SUM: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn fake() -> FakePve {
        FakePve::default()
            .with(
                "/nodes/pve1/storage?content=iso",
                json!([{"storage": "local", "enabled": 1}]),
            )
            .with(
                "/nodes/pve1/storage/local/content?content=iso",
                json!([{"volid": "local:iso/old.iso", "content": "iso"}]),
            )
            .answering("POST /nodes/pve1/storage/local/download-url", json!(UPID))
    }

    fn args(extra: Value) -> String {
        let mut a = json!({"node": "pve1", "storage": "local", "content": "iso",
                           "url": "https://example.org/x.iso", "filename": "x.iso"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.to_string()
    }

    #[test]
    fn a_download_sends_the_url_name_and_checksum() {
        let mut pve = fake();
        let out = TOOL
            .call(&mut pve, &args(json!({"checksum": SUM, "checksum_algorithm": "sha256"})))
            .unwrap();
        assert_valid_output(&TOOL, &out);
        assert_eq!(
            pve.writes,
            [format!(
                "POST /nodes/pve1/storage/local/download-url url=https%3A%2F%2Fexample.org%2Fx.iso&content=iso&filename=x.iso&checksum={SUM}&checksum-algorithm=sha256"
            )]
        );
        assert_eq!(out.structured["task"]["upid"], UPID);
    }

    #[test]
    fn what_cannot_work_is_refused_before_any_write() {
        for (extra, says) in [
            (json!({"filename": "old.iso"}), "local:iso/old.iso is already on local"),
            (json!({"filename": "x.tar.zst"}), "filename: \"x.tar.zst\" does not end in .iso, .img"),
            (json!({"checksum": SUM}), "checksum_algorithm: missing"),
            (json!({"checksum": "abc", "checksum_algorithm": "sha256"}), "64 hex digits"),
            (json!({"storage": "nfs"}), "\"nfs\" does not take ISO images (iso) on node pve1"),
        ] {
            let mut pve = fake();
            let e = TOOL.call(&mut pve, &args(extra.clone())).unwrap_err();
            assert!(e.message().contains(says), "{extra}: {e}");
            assert!(pve.writes.is_empty());
        }
    }
}
