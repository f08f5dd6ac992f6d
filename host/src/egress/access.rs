//! What a call may send: read or write, the methods each lets out.

use http::Method;

/// What a call may send: the methods the egress gate lets out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// GET only.
    Read,
    /// The methods the Proxmox API writes with, too.
    Write,
}

impl Access {
    /// Write access when `may_write`, else read-only.
    pub fn writing_if(may_write: bool) -> Access {
        if may_write {
            Access::Write
        } else {
            Access::Read
        }
    }

    /// The methods this access allows.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Access::Read => &[Method::GET],
            Access::Write => &[Method::GET, Method::POST, Method::PUT, Method::DELETE],
        }
    }

    /// Whether `method` may go out.
    pub fn allows(self, method: &Method) -> bool {
        self.methods().contains(method)
    }

    /// `read` or `write`, as the audit log names it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}
