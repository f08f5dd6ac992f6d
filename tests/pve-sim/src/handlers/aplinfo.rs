//! The appliance index: `GET /nodes/{node}/aplinfo` (pve-manager's
//! `PVE::APLInfo` records) and `POST /nodes/{node}/aplinfo`, which
//! downloads a container template into a storage, verified against the
//! index's `sha512sum`.

use serde_json::{Map, Value};

use super::Ctx;
use super::act::{self, die};
use super::download::{Fetch, content_dir, download_checksum};
use super::storage_cfg::{check_enabled, fs_base, has_content};
use crate::errors::{ApiError, HandlerResult, Reply};

const PROXMOX: &str = "http://download.proxmox.com/images";
const TURNKEY: &str = "https://releases.turnkeylinux.org/pve";

/// One `aplinfo.dat` record: the fields that vary.
struct Appliance {
    package: &'static str,
    version: &'static str,
    os: &'static str,
    section: &'static str,
    template: &'static str,
    headline: &'static str,
    description: &'static str,
    maintainer: &'static str,
    infopage: &'static str,
    /// TurnKey's web UI (`__IPADDRESS__` is the container's address).
    manageurl: Option<&'static str>,
    /// Older records carry an MD5 next to the SHA-512.
    md5: bool,
}

const PVE_TEAM: &str = "Proxmox Support Team <support@proxmox.com>";
const CT_INFO: &str = "https://pve.proxmox.com/wiki/Linux_Container#pct_supported_distributions";

const APPLIANCES: &[Appliance] = &[
    Appliance {
        package: "debian-12-standard",
        version: "12.12-1",
        os: "debian-12",
        section: "system",
        template: "debian-12-standard_12.12-1_amd64.tar.zst",
        headline: "Debian 12 Bookworm (standard)",
        description: "A small Debian Bookworm system including all standard packages.",
        maintainer: PVE_TEAM,
        infopage: CT_INFO,
        manageurl: None,
        md5: true,
    },
    Appliance {
        package: "debian-13-standard",
        version: "13.1-2",
        os: "debian-13",
        section: "system",
        template: "debian-13-standard_13.1-2_amd64.tar.zst",
        headline: "Debian 13 Trixie (standard)",
        description: "A small Debian Trixie system including all standard packages.",
        maintainer: PVE_TEAM,
        infopage: CT_INFO,
        manageurl: None,
        md5: false,
    },
    Appliance {
        package: "ubuntu-24.04-standard",
        version: "24.04-2",
        os: "ubuntu-24.04",
        section: "system",
        template: "ubuntu-24.04-standard_24.04-2_amd64.tar.zst",
        headline: "Ubuntu 24.04 Noble (standard)",
        description: "A small Ubuntu 24.04 Noble Numbat system including all standard packages.",
        maintainer: PVE_TEAM,
        infopage: CT_INFO,
        manageurl: None,
        md5: false,
    },
    Appliance {
        package: "alpine-3.20-default",
        version: "20240908",
        os: "alpine-3.20",
        section: "system",
        template: "alpine-3.20-default_20240908_amd64.tar.xz",
        headline: "Alpine Linux 3.20",
        description: "A small Alpine Linux 3.20 system.",
        maintainer: PVE_TEAM,
        infopage: CT_INFO,
        manageurl: None,
        md5: false,
    },
    Appliance {
        package: "turnkey-wordpress",
        version: "18.1-1",
        os: "debian-12",
        section: "turnkeylinux",
        template: "debian-12-turnkey-wordpress_18.1-1_amd64.tar.gz",
        headline: "TurnKey WordPress",
        description: "WordPress is a state-of-the-art publishing platform with a focus on \
                      aesthetics, web standards, and usability.",
        maintainer: "Anton Pyrogovskyi <anton@turnkeylinux.org>",
        infopage: "https://www.turnkeylinux.org/wordpress",
        manageurl: Some("https://__IPADDRESS__/"),
        md5: false,
    },
];

fn source(a: &Appliance) -> &'static str {
    if a.section == "turnkeylinux" {
        TURNKEY
    } else {
        PROXMOX
    }
}

/// Where the template is downloaded from (`<source>/<section>/<file>` for
/// Proxmox's own, `<source>/<file>` for TurnKey's).
fn location(a: &Appliance) -> String {
    if a.section == "turnkeylinux" {
        format!("{TURNKEY}/{}", a.template)
    } else {
        format!("{PROXMOX}/{}/{}", a.section, a.template)
    }
}

/// The record as `GET .../aplinfo` lists it.
fn record(a: &Appliance) -> Value {
    let loc = location(a);
    let mut m = Map::new();
    for (k, v) in [
        ("package", a.package),
        ("version", a.version),
        ("type", "lxc"),
        ("os", a.os),
        ("section", a.section),
        ("maintainer", a.maintainer),
        ("architecture", "amd64"),
        ("infopage", a.infopage),
        ("headline", a.headline),
        ("description", a.description),
        ("source", source(a)),
        ("template", a.template),
    ] {
        m.insert(k.into(), v.into());
    }
    if let Some(u) = a.manageurl {
        m.insert("manageurl".into(), u.into());
    }
    if a.md5 {
        m.insert("md5sum".into(), download_checksum(&loc, "md5").into());
    }
    m.insert("sha512sum".into(), download_checksum(&loc, "sha512").into());
    m.insert("location".into(), loc.into());
    Value::Object(m)
}

/// `GET /nodes/{node}/aplinfo`.
pub(crate) fn index(_ctx: &Ctx<'_>) -> HandlerResult {
    Ok(Reply::Data(Value::Array(
        APPLIANCES.iter().map(record).collect(),
    )))
}

/// `POST /nodes/{node}/aplinfo`: a `download` task named after the
/// template.
pub(crate) fn download(ctx: &Ctx<'_>) -> HandlerResult {
    let template = ctx.params.get("template").unwrap_or("");
    let Some(a) = APPLIANCES.iter().find(|a| a.template == template) else {
        return Err(ApiError::param("template", "no such template"));
    };
    let mut c = ctx.cluster_mut();
    let id = ctx.params.get("storage").unwrap_or("");
    let s = check_enabled(&c, id, ctx.node)?;
    let base = fs_base(s).filter(|_| has_content(s, "vztmpl"));
    let Some(base) = base else {
        return Err(die(format!("storage '{id}' does not support templates")));
    };
    let url = location(a);
    let fetch = Fetch {
        checksum: download_checksum(&url, "sha512").map(|sum| ("sha512".to_string(), sum)),
        dest: format!("{base}/{}/{template}", content_dir("vztmpl")),
        volid: format!("{id}:vztmpl/{template}"),
        storage: id.to_string(),
        shared: s.shared,
        content: "vztmpl",
        format: super::storage_cfg::leak_format(if template.ends_with(".tar.xz") {
            "txz"
        } else if template.ends_with(".tar.gz") {
            "tgz"
        } else {
            "tzst"
        }),
        url,
        verify_certificates: true,
        compression: None,
    };
    let user = act::user(ctx);
    act::upid(super::download::spawn(
        &mut c, ctx.node, template, &user, fetch,
    ))
}
