//! Storage content writes over real HTTPS: deleting volumes, downloading
//! files from URLs, and the appliance index and its downloads.

use serde_json::{Value, json};

use super::calls::*;
use super::*;

/// The volids a storage lists on a node.
async fn listed(sim: &Simulator, node: &str, storage: &str) -> Vec<String> {
    data(sim, &format!("/nodes/{node}/storage/{storage}/content"))
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["volid"].as_str().unwrap().to_string())
        .collect()
}

/// The newest backup of `vmid` on nfs-backup.
async fn backup_of(sim: &Simulator, vmid: u32) -> String {
    let l = data(
        sim,
        &format!("/nodes/pve1/storage/nfs-backup/content?vmid={vmid}"),
    )
    .await;
    l.as_array().unwrap().last().unwrap()["volid"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn volumes_are_deleted_by_imgdel_tasks() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(50));
    // A whole volid after `content/`, its slash as it is.
    let b100 = backup_of(&sim, 100).await;
    let u = upid(
        &delete(
            &sim,
            &format!("/nodes/pve1/storage/nfs-backup/content/{b100}"),
        )
        .await,
    );
    assert!(u.contains(":imgdel:100@nfs-backup:"), "{u}");
    let t = finished(&sim, &u).await;
    assert_eq!(
        t.log,
        [format!("Removed volume '{b100}'"), "TASK OK".into()]
    );
    assert!(!listed(&sim, "pve2", "nfs-backup").await.contains(&b100));
    // Percent-encoded, and as a name relative to the storage.
    let b101 = backup_of(&sim, 101).await;
    let enc = b101.replace(':', "%3A").replace('/', "%2F");
    let t = run(
        &sim,
        delete(
            &sim,
            &format!("/nodes/pve1/storage/nfs-backup/content/{enc}"),
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    let b106 = backup_of(&sim, 106).await;
    let name = b106.strip_prefix("nfs-backup:").unwrap();
    let t = run(
        &sim,
        delete(
            &sim,
            &format!("/nodes/pve1/storage/nfs-backup/content/{name}"),
        )
        .await,
    )
    .await;
    assert_eq!(t.task_type, "imgdel");
    assert!(!listed(&sim, "pve1", "nfs-backup").await.contains(&b106));

    // A protected backup stays.
    let b107 = backup_of(&sim, 107).await;
    let t = run(
        &sim,
        delete(
            &sim,
            &format!("/nodes/pve1/storage/nfs-backup/content/{b107}"),
        )
        .await,
    )
    .await;
    let name = b107.strip_prefix("nfs-backup:").unwrap();
    assert_eq!(
        t.exitstatus,
        Some(format!(
            "cannot remove protected volume '{name}' on 'nfs-backup'"
        ))
    );
    assert!(listed(&sim, "pve1", "nfs-backup").await.contains(&b107));
    // `delay`: the answer waits for a short task (null, or its error).
    let r = delete(
        &sim,
        &format!("/nodes/pve1/storage/nfs-backup/content/{b107}?delay=5"),
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            format!("cannot remove protected volume '{name}' on 'nfs-backup'\n")
        )
    );
    let r = delete(
        &sim,
        "/nodes/pve1/storage/local/content/local:iso/ubuntu-24.04.3-live-server-amd64.iso?delay=5",
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    assert!(
        !listed(&sim, "pve1", "local")
            .await
            .contains(&"local:iso/ubuntu-24.04.3-live-server-amd64.iso".to_string())
    );

    // A file that is not there: a warning. A missing LV: nothing to do.
    let t = run(
        &sim,
        delete(
            &sim,
            "/nodes/pve1/storage/local/content/local:iso/nothing.iso",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("WARNINGS: 1"));
    assert_eq!(
        t.log,
        [
            "WARN: disk image '/var/lib/vz/template/iso/nothing.iso' does not exist",
            "Removed volume 'local:iso/nothing.iso'",
            "TASK WARNINGS: 1"
        ]
    );
    // Local storages are per node: pve2's ISO is not on pve1.
    let t = run(
        &sim,
        delete(
            &sim,
            "/nodes/pve1/storage/local/content/local:iso/virtio-win-0.1.285.iso",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("WARNINGS: 1"));
    let t = run(
        &sim,
        delete(
            &sim,
            "/nodes/pve2/storage/local/content/local:iso/virtio-win-0.1.285.iso",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(
        listed(&sim, "pve2", "local")
            .await
            .iter()
            .all(|v| !v.contains("virtio-win"))
    );
    // An image a VM still uses goes like any other (PVE's API does not
    // check; its GUI refuses); the config keeps naming it.
    let t = run(
        &sim,
        delete(&sim, "/nodes/pve1/storage/local-lvm/content/vm-104-disk-0").await,
    )
    .await;
    assert_eq!(
        t.log,
        [
            "  Logical volume \"vm-104-disk-0\" successfully removed.",
            "Removed volume 'local-lvm:vm-104-disk-0'",
            "TASK OK"
        ]
    );
    assert!(t.id == "104@local-lvm");
    assert_eq!(
        sim.guest(104).unwrap().config["scsi0"],
        "local-lvm:vm-104-disk-0,iothread=1,size=64G"
    );
    let t = run(
        &sim,
        delete(&sim, "/nodes/pve1/storage/local-lvm/content/vm-999-disk-0").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));

    // Refusals before the task.
    let r = delete(
        &sim,
        "/nodes/pve1/storage/local/content/nfs-backup:backup/x.vma.zst",
    )
    .await;
    assert_eq!(
        r.json()["errors"]["volume"],
        "storage ID mismatch (nfs-backup != local)\n"
    );
    for (path, text) in [
        (
            "/nodes/pve1/storage/nope/content/x.iso",
            "storage 'nope' does not exist\n",
        ),
        (
            "/nodes/pve1/storage/local/content/local:nonsense",
            "unable to parse directory volume name 'nonsense'\n",
        ),
        (
            "/nodes/pve1/storage/local-lvm/content/local-lvm:iso/x.iso",
            "unable to parse lvm volume name 'iso/x.iso'\n",
        ),
    ] {
        let r = delete(&sim, path).await;
        assert_eq!((r.status, message(&r)), (500, text.to_string()), "{path}");
    }
    let b103 = backup_of(&sim, 103).await;
    let r = as_auditor(
        &sim,
        "DELETE",
        &format!("/nodes/pve1/storage/nfs-backup/content/{b103}"),
        "",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/storage/nfs-backup, Datastore.AllocateSpace)\n"
    );
    let r = as_auditor(
        &sim,
        "DELETE",
        "/nodes/pve1/storage/local/content/local:vztmpl/debian-12-standard_12.12-1_amd64.tar.zst",
        "",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/storage/local, Datastore.Allocate)\n"
    );
    // Stopped, it deletes nothing.
    sim.set_task_duration_for("imgdel", Duration::from_secs(3600));
    let u = upid(
        &delete(
            &sim,
            &format!("/nodes/pve1/storage/nfs-backup/content/{b103}"),
        )
        .await,
    );
    delete(&sim, &format!("/nodes/pve1/tasks/{u}")).await.data();
    assert_eq!(
        sim.task(&u).unwrap().exitstatus.as_deref(),
        Some("interrupted by signal")
    );
    assert!(listed(&sim, "pve1", "nfs-backup").await.contains(&b103));
    // Schema: `delay` is 1..30.
    let r = delete(
        &sim,
        &format!("/nodes/pve1/storage/nfs-backup/content/{b103}?delay=60"),
    )
    .await;
    assert_eq!(
        r.json()["errors"]["delay"],
        "value must have a maximum value of 30"
    );
    only_violations(&sim, &["DELETE /nodes/pve1/storage/nfs-backup/content/"]);
    sim.shutdown().await;
}

#[tokio::test]
async fn files_download_from_urls() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(50));
    let url = "https://releases.example.com/noble/noble-server.iso";
    let sum = crate::download_checksum(url, "sha256").unwrap();
    assert_eq!(
        sum,
        crate::digests::hex_digest("sha256", &crate::download_bytes(url)).unwrap()
    );
    let form = format!(
        "url={}&content=iso&filename=noble.iso&checksum={sum}&checksum-algorithm=sha256",
        form_escape(url)
    );
    let u = upid(&post(&sim, "/nodes/pve1/storage/local/download-url", &form).await);
    assert!(u.contains(":download:noble.iso:"), "{u}");
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[0],
        format!("downloading {url} to /var/lib/vz/template/iso/noble.iso")
    );
    assert!(t.log.iter().any(|l| l.starts_with("Length: ")));
    assert!(
        t.log.iter().any(|l| l.contains("100% 96.4M=27s")),
        "{:?}",
        t.log
    );
    assert!(
        t.log
            .contains(&"calculating checksum...OK, checksum verified".to_string())
    );
    assert_eq!(
        t.log[t.log.len() - 2],
        format!("download of '{url}' to '/var/lib/vz/template/iso/noble.iso' finished")
    );
    let l = data(&sim, "/nodes/pve1/storage/local/content?content=iso").await;
    let iso = l
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["volid"] == "local:iso/noble.iso")
        .expect("listed");
    assert_eq!(iso["format"], "iso");
    assert!(
        !listed(&sim, "pve2", "local")
            .await
            .contains(&"local:iso/noble.iso".to_string())
    );

    // The same name again: refused, unless the checksum shows it is there.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/storage/local/download-url",
            &format!("url={}&content=iso&filename=noble.iso", form_escape(url)),
        )
        .await,
    )
    .await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("refusing to override existing file '/var/lib/vz/template/iso/noble.iso'")
    );
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/storage/local/download-url", &form).await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[1],
        "calculating checksum of existing file...OK, got correct file already, no need to download"
    );

    // A wrong checksum: the task fails and no file appears.
    let bad = format!(
        "url={}&content=iso&filename=other.iso&checksum={}&checksum-algorithm=md5",
        form_escape(url),
        "0".repeat(32)
    );
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/storage/local/download-url", &bad).await,
    )
    .await;
    let md5 = crate::download_checksum(url, "md5").unwrap();
    assert_eq!(
        t.exitstatus,
        Some(format!(
            "checksum mismatch: got '{md5}' != expect '{}'",
            "0".repeat(32)
        ))
    );
    assert_eq!(t.log[t.log.len() - 2], "calculating checksum...");
    assert!(
        !listed(&sim, "pve1", "local")
            .await
            .contains(&"local:iso/other.iso".to_string())
    );
    // A URL the web does not have.
    let gone = "https://releases.example.com/404/gone.iso";
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/storage/local/download-url",
            &format!(
                "url={}&content=iso&filename=gone.iso&verify-certificates=0",
                form_escape(gone)
            ),
        )
        .await,
    )
    .await;
    let status = t.exitstatus.unwrap();
    assert!(
        status.starts_with(
            "download failed: command 'wget --progress=dot:giga -O /var/lib/vz/template/iso/gone.iso.tmp_dwnl."
        ) && status.ends_with(&format!("{gone} --no-check-certificate' failed: exit code 8")),
        "{status}"
    );
    assert!(
        t.log
            .contains(&"HTTP request sent, awaiting response... 404 Not Found".to_string())
    );

    // Templates, imports, and names made safe.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve2/storage/local/download-url",
            "url=https%3A%2F%2Fimages.example.com%2Fct%2Fmine.tar.zst&content=vztmpl&filename=my+ct%3F.tar.zst",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(
        listed(&sim, "pve2", "local")
            .await
            .contains(&"local:vztmpl/my_ct_.tar.zst".to_string())
    );
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/storage/nfs-images/download-url",
            "url=https%3A%2F%2Fimages.example.com%2Fdisk.qcow2&content=import&filename=disk.qcow2",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    let l = data(
        &sim,
        "/nodes/pve2/storage/nfs-images/content?content=import",
    )
    .await;
    assert_eq!(
        (&l[0]["volid"], &l[0]["format"]),
        (&json!("nfs-images:import/disk.qcow2"), &json!("qcow2"))
    );
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/storage/local/download-url",
            "url=https%3A%2F%2Fe.x%2Fa.tar.gz&content=vztmpl&filename=a.tar.gz&compression=gz",
        )
        .await,
    )
    .await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("decompression not supported for vztmpl")
    );

    // Refused at once.
    let dl = |storage: &'static str, form: &'static str| {
        let sim = &sim;
        async move {
            post(
                sim,
                &format!("/nodes/pve1/storage/{storage}/download-url"),
                form,
            )
            .await
        }
    };
    for (storage, form, text) in [
        (
            "local-lvm",
            "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso",
            "can't upload to storage type 'lvmthin', not a file based storage!\n",
        ),
        (
            "nfs-backup",
            "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso",
            "storage 'nfs-backup' is not configured for content-type 'iso'\n",
        ),
        (
            "local",
            "url=https%3A%2F%2Fe.x%2Fa.qcow2&content=import&filename=a.qcow2",
            "storage 'local' is not configured for content-type 'import'\n",
        ),
        (
            "nope",
            "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso",
            "storage 'nope' does not exist\n",
        ),
    ] {
        let r = dl(storage, form).await;
        assert_eq!(
            (r.status, message(&r)),
            (500, text.to_string()),
            "{storage}"
        );
    }
    let r = dl(
        "local",
        "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.txt",
    )
    .await;
    assert_eq!(r.json()["errors"]["filename"], "wrong file extension");
    let r = dl(
        "nfs-images",
        "url=https%3A%2F%2Fe.x%2Fa.img&content=import&filename=a.img",
    )
    .await;
    assert_eq!(
        r.json()["errors"]["filename"],
        "invalid filename or wrong extension"
    );
    let r = as_auditor(
        &sim,
        "POST",
        "/nodes/pve1/storage/local/download-url",
        "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso",
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/storage/local, Datastore.AllocateTemplate)\n"
    );
    // Schema: the URL pattern, and a checksum needs its algorithm.
    let r = dl(
        "local",
        "url=ftp%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso",
    )
    .await;
    assert_eq!(
        r.json()["errors"]["url"],
        "value does not match the regex pattern"
    );
    let r = dl(
        "local",
        "url=https%3A%2F%2Fe.x%2Fa.iso&content=iso&filename=a.iso&checksum=ab",
    )
    .await;
    assert_eq!(
        r.json()["errors"]["checksum-algorithm"],
        "missing property - 'checksum' requires this property"
    );
    // A long download, stopped: no file.
    sim.set_task_duration_for("download", Duration::from_secs(3600));
    let u = upid(
        &dl(
            "local",
            "url=https%3A%2F%2Fe.x%2Fslow.iso&content=iso&filename=slow.iso",
        )
        .await,
    );
    delete(&sim, &format!("/nodes/pve1/tasks/{u}")).await.data();
    assert!(
        !listed(&sim, "pve1", "local")
            .await
            .contains(&"local:iso/slow.iso".to_string())
    );
    only_violations(
        &sim,
        &[
            "POST /nodes/pve1/storage/local/download-url: url:",
            "POST /nodes/pve1/storage/local/download-url: checksum-algorithm:",
        ],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn appliances_are_listed_and_downloaded() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(50));
    let list = get(&sim, "/api2/json/nodes/pve1/aplinfo", AUDITOR)
        .await
        .data();
    let list = list.as_array().unwrap();
    let templates: Vec<&str> = list
        .iter()
        .map(|a| a["template"].as_str().unwrap())
        .collect();
    assert_eq!(
        templates,
        [
            "debian-12-standard_12.12-1_amd64.tar.zst",
            "debian-13-standard_13.1-2_amd64.tar.zst",
            "ubuntu-24.04-standard_24.04-2_amd64.tar.zst",
            "alpine-3.20-default_20240908_amd64.tar.xz",
            "debian-12-turnkey-wordpress_18.1-1_amd64.tar.gz",
        ]
    );
    let d12 = &list[0];
    let loc = "http://download.proxmox.com/images/system/debian-12-standard_12.12-1_amd64.tar.zst";
    assert_eq!(
        keys(d12),
        [
            "architecture",
            "description",
            "headline",
            "infopage",
            "location",
            "maintainer",
            "md5sum",
            "os",
            "package",
            "section",
            "sha512sum",
            "source",
            "template",
            "type",
            "version",
        ]
        .into_iter()
        .map(String::from)
        .collect::<BTreeSet<String>>()
    );
    assert_eq!(d12["location"], loc);
    assert_eq!(
        d12["sha512sum"],
        crate::download_checksum(loc, "sha512").unwrap()
    );
    assert_eq!(
        (&d12["type"], &d12["os"]),
        (&json!("lxc"), &json!("debian-12"))
    );
    let tk = &list[4];
    assert_eq!(
        (&tk["section"], &tk["manageurl"], &tk["source"]),
        (
            &json!("turnkeylinux"),
            &json!("https://__IPADDRESS__/"),
            &json!("https://releases.turnkeylinux.org/pve")
        )
    );

    // A download verified against the index's SHA-512.
    let ubuntu = "ubuntu-24.04-standard_24.04-2_amd64.tar.zst";
    let u = upid(
        &post(
            &sim,
            "/nodes/pve1/aplinfo",
            &format!("storage=local&template={ubuntu}"),
        )
        .await,
    );
    assert!(u.contains(&format!(":download:{ubuntu}:")), "{u}");
    let t = finished(&sim, &u).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert_eq!(
        t.log[0],
        format!(
            "downloading http://download.proxmox.com/images/system/{ubuntu} to \
             /var/lib/vz/template/cache/{ubuntu}"
        )
    );
    assert!(
        t.log
            .contains(&"calculating checksum...OK, checksum verified".to_string())
    );
    let l = data(&sim, "/nodes/pve1/storage/local/content?content=vztmpl").await;
    assert!(
        l.as_array()
            .unwrap()
            .iter()
            .any(|v| v["volid"] == format!("local:vztmpl/{ubuntu}") && v["format"] == "tzst")
    );
    // The seeded Debian 12 template is that very file already.
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve1/aplinfo",
            "storage=local&template=debian-12-standard_12.12-1_amd64.tar.zst",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(t.log[1].ends_with("OK, got correct file already, no need to download"));
    let t = run(
        &sim,
        post(
            &sim,
            "/nodes/pve2/aplinfo",
            "storage=local&template=alpine-3.20-default_20240908_amd64.tar.xz",
        )
        .await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    let l = data(&sim, "/nodes/pve2/storage/local/content?content=vztmpl").await;
    assert_eq!(l[0]["format"], "txz");

    let r = post(
        &sim,
        "/nodes/pve1/aplinfo",
        "storage=local&template=nope.tar.gz",
    )
    .await;
    assert_eq!(r.json()["errors"]["template"], "no such template");
    for (storage, text) in [
        (
            "local-lvm",
            "storage 'local-lvm' does not support templates\n",
        ),
        (
            "nfs-images",
            "storage 'nfs-images' does not support templates\n",
        ),
        ("nope", "storage 'nope' does not exist\n"),
    ] {
        let r = post(
            &sim,
            "/nodes/pve1/aplinfo",
            &format!("storage={storage}&template={ubuntu}"),
        )
        .await;
        assert_eq!(
            (r.status, message(&r)),
            (500, text.to_string()),
            "{storage}"
        );
    }
    let r = as_auditor(
        &sim,
        "POST",
        "/nodes/pve1/aplinfo",
        &format!("storage=local&template={ubuntu}"),
    )
    .await;
    assert_eq!(
        message(&r),
        "Permission check failed (/storage/local, Datastore.AllocateTemplate)\n"
    );
    let r = post(&sim, "/nodes/pve1/aplinfo", "template=x").await;
    assert_eq!(
        r.json()["errors"]["storage"],
        "property is missing and it is not optional"
    );
    only_violations(&sim, &["POST /nodes/pve1/aplinfo: storage:"]);
    sim.shutdown().await;
}
