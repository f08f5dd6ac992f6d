//! Cloud-init over real HTTPS: the pending list, the generated data, the
//! drive's regeneration, and the cloud-init keys and drives config writes
//! set.

use serde_json::{Value, json};

use super::calls::*;
use super::*;

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMq0b4m1jN3sH2d7Zx9yQ4cVv8rT6eW1aB2cD3eF4gH5 ops@example.com";

/// A VM's first MAC address, as the network data writes it.
fn mac(sim: &Simulator, vmid: u32) -> String {
    let g = sim.guest(vmid).unwrap();
    let net0 = g.config["net0"].as_str().unwrap().to_string();
    let first = net0.split(',').next().unwrap();
    first.split_once('=').unwrap().1.to_lowercase()
}

#[tokio::test]
async fn pending_values_and_generated_data() {
    let sim = sim().await;
    // The seed's drive was generated for user `admin`.
    let ci = data(&sim, "/nodes/pve1/qemu/900/cloudinit").await;
    let escaped = sim.guest(900).unwrap().config["sshkeys"].clone();
    assert_eq!(
        ci,
        json!([
            {"key": "cipassword", "value": "**********"},
            {"key": "ciuser", "value": "admin", "pending": "ubuntu"},
            {"key": "sshkeys", "value": escaped},
        ])
    );
    assert!(escaped.as_str().unwrap().starts_with("ssh-ed25519%20AAAA"));

    // The user data as the drive would get it now; root-token callers may
    // change cloud-init settings, so they see the hash.
    let user = data(&sim, "/nodes/pve1/qemu/900/cloudinit/dump?type=user").await;
    let user = user.as_str().unwrap();
    let lines: Vec<&str> = user.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "#cloud-config",
            "hostname: ubuntu-2404-cloudinit",
            "manage_etc_hosts: true",
            "fqdn: ubuntu-2404-cloudinit",
            "user: ubuntu"
        ]
    );
    assert!(lines[5].starts_with("password: $5$Qv8Zc1Lr$"), "{user}");
    assert_eq!(
        lines[6..],
        [
            "ssh_authorized_keys:",
            &format!("  - {KEY}"),
            "chpasswd:",
            "  expire: False",
            "users:",
            "  - default",
            "package_upgrade: true"
        ]
    );
    let network = data(&sim, "/nodes/pve1/qemu/900/cloudinit/dump?type=network").await;
    assert_eq!(
        network.as_str().unwrap(),
        format!(
            "version: 1\nconfig:\n    - type: physical\n      name: eth0\n      mac_address: '{}'\n      \
             subnets:\n      - type: dhcp4\n      - type: ipv6_slaac\n    - type: nameserver\n      \
             address:\n      - '192.0.2.1'\n      search:\n      - 'demo.lan'\n",
            mac(&sim, 900)
        )
    );
    let meta = data(&sim, "/nodes/pve1/qemu/900/cloudinit/dump?type=meta").await;
    let id = crate::digests::hex(&crate::digests::sha1(
        format!("{user}{}", network.as_str().unwrap()).as_bytes(),
    ));
    assert_eq!(meta, format!("instance-id: {id}\n"));

    // A password set through the config: hashed, masked in the config, and
    // masked in the dump for a caller without VM.Config.Cloudinit.
    let r = put(&sim, "/nodes/pve1/qemu/101/config", "cipassword=s3cret").await;
    assert_eq!(r.status, 200, "{:?}", r.reason);
    let cfg = data(&sim, "/nodes/pve1/qemu/101/config").await;
    assert_eq!(cfg["cipassword"], "**********");
    let r = as_auditor(
        &sim,
        "GET",
        "/nodes/pve1/qemu/101/cloudinit/dump?type=user",
        "",
    )
    .await;
    assert!(
        r.data()
            .as_str()
            .unwrap()
            .contains("\npassword: **********\n")
    );
    let mine = data(&sim, "/nodes/pve1/qemu/101/cloudinit/dump?type=user").await;
    assert!(mine.as_str().unwrap().contains("\npassword: $5$"), "{mine}");
    // PVE writes the password straight into the config: never pending.
    let ci = data(&sim, "/nodes/pve1/qemu/101/cloudinit").await;
    assert_eq!(ci, json!([{"key": "cipassword", "value": "**********"}]));
    // A VM without a cloud-init drive still dumps (PVE does not check).
    let d = data(&sim, "/nodes/pve1/qemu/104/cloudinit/dump?type=user").await;
    assert!(
        d.as_str()
            .unwrap()
            .starts_with("#cloud-config\nhostname: dev-sandbox\n")
    );
    // The auditor may not see VM 900 at all.
    let r = as_auditor(&sim, "GET", "/nodes/pve1/qemu/900/cloudinit", "").await;
    assert_eq!(
        (r.status, message(&r)),
        (
            403,
            "Permission check failed (/vms/900, VM.Audit)\n".to_string()
        )
    );
    // Schema: `type` is required and an enum.
    let r = get(
        &sim,
        "/api2/json/nodes/pve1/qemu/900/cloudinit/dump?type=vendor",
        ADMIN,
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["type"],
        "value 'vendor' does not have a value in the enumeration 'user, network, meta'"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/900/cloudinit/dump", ADMIN).await;
    assert_eq!(
        r.json()["errors"]["type"],
        "property is missing and it is not optional"
    );
    let r = get(&sim, "/api2/json/nodes/pve1/qemu/106/cloudinit", ADMIN).await;
    assert_eq!(
        message(&r),
        "Configuration file 'nodes/pve1/qemu-server/106.conf' does not exist\n"
    );
    only_violations(
        &sim,
        &[
            "GET /nodes/pve1/qemu/900/cloudinit/dump: type:",
            "GET /nodes/pve1/qemu/900/cloudinit/dump: type:",
        ],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn config_writes_record_changes_until_the_drive_is_regenerated() {
    let sim = sim().await;
    // A cloud-init drive: `<storage>:cloudinit` allocates `vm-<id>-cloudinit`.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        "ide2=local-lvm%3Acloudinit",
    )
    .await;
    assert_eq!(r.data(), Value::Null);
    let g = sim.guest(104).unwrap();
    assert_eq!(g.config["ide2"], "local-lvm:vm-104-cloudinit,media=cdrom");
    let vols = data(&sim, "/nodes/pve1/storage/local-lvm/content?vmid=104").await;
    let ci_vol = vols
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["volid"] == "local-lvm:vm-104-cloudinit")
        .expect("the drive's volume is listed");
    assert_eq!(
        (&ci_vol["size"], &ci_vol["format"]),
        (&json!(4_194_304), &json!("raw"))
    );
    // Only one cloud-init drive per VM.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        "sata1=local-lvm%3Acloudinit",
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (
            500,
            "sata1 - cloud-init drive is already attached at 'ide2'\n".to_string()
        )
    );

    // New keys are pending as `added`.
    let form = format!(
        "ciuser=ops&sshkeys={}&ipconfig0={}&nameserver=1.1.1.1",
        form_escape(&form_escape(KEY)),
        form_escape("ip=10.0.0.50/24,gw=10.0.0.1")
    );
    let r = put(&sim, "/nodes/pve1/qemu/104/config", &form).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    let ci = data(&sim, "/nodes/pve1/qemu/104/cloudinit").await;
    let keys: Vec<(&str, bool, bool)> = ci
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap(),
                e.get("value").is_some(),
                e.get("pending").is_some(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("ciuser", false, true),
            ("ipconfig0", false, true),
            ("nameserver", false, true),
            ("sshkeys", false, true)
        ]
    );
    assert_eq!(ci[1]["pending"], "ip=10.0.0.50/24,gw=10.0.0.1");
    let net = data(&sim, "/nodes/pve1/qemu/104/cloudinit/dump?type=network").await;
    assert!(
        net.as_str().unwrap().contains(
            "      - type: static\n        address: '10.0.0.50'\n        netmask: '255.255.255.0'\n        \
             gateway: '10.0.0.1'\n"
        ),
        "{net}"
    );
    assert!(
        net.as_str()
            .unwrap()
            .ends_with("      address:\n      - '1.1.1.1'\n      search:\n      - 'demo.lan'\n")
    );

    // Regenerating the drive: nothing pending any more.
    let digest = sim.guest(104).unwrap().digest;
    let r = put(&sim, "/nodes/pve1/qemu/104/cloudinit", "").await;
    assert_eq!(r.data(), Value::Null);
    assert_ne!(
        sim.guest(104).unwrap().digest,
        digest,
        "the section left the file"
    );
    let ci = data(&sim, "/nodes/pve1/qemu/104/cloudinit").await;
    assert_eq!(
        ci,
        json!([
            {"key": "ciuser", "value": "ops"},
            {"key": "nameserver", "value": "1.1.1.1"},
            {"key": "sshkeys", "value": form_escape(KEY)},
        ])
    );
    // Changed and deleted keys.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        "ciuser=admin&delete=nameserver",
    )
    .await;
    assert_eq!(r.status, 200);
    let ci = data(&sim, "/nodes/pve1/qemu/104/cloudinit").await;
    assert_eq!(
        ci,
        json!([
            {"key": "ciuser", "value": "ops", "pending": "admin"},
            {"key": "sshkeys", "value": form_escape(KEY)},
            {"key": "nameserver", "delete": 1},
        ])
    );
    // A VM start generates the drive too.
    sim.set_task_duration(Duration::from_millis(50));
    let t = run(
        &sim,
        post(&sim, "/nodes/pve1/qemu/104/status/start", "").await,
    )
    .await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(t.log.iter().any(|l| l == "generating cloud-init ISO"));
    let ci = data(&sim, "/nodes/pve1/qemu/104/cloudinit").await;
    assert!(
        ci.as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("pending").is_none())
    );

    // Removing the drive frees its volume.
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "delete=ide2").await;
    assert_eq!(r.status, 200);
    let vols = data(&sim, "/nodes/pve1/storage/local-lvm/content?vmid=104").await;
    assert!(!vols.to_string().contains("vm-104-cloudinit"), "{vols}");
    // Regenerating without a drive is a silent no-op, as in PVE.
    assert_eq!(
        put(&sim, "/nodes/pve1/qemu/104/cloudinit", "").await.data(),
        Value::Null
    );
    no_violations(&sim);
    sim.shutdown().await;
}

#[tokio::test]
async fn cloud_init_keys_are_validated_like_pve() {
    let sim = sim().await;
    // sshkeys must be URL-encoded (the schema's `urlencoded` format).
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("sshkeys={}", form_escape(KEY)),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["sshkeys"],
        format!("invalid format - invalid urlencoded string: {KEY}\n")
    );
    // Encoded, but not a key.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("sshkeys={}", form_escape("not%20a%20key")),
    )
    .await;
    assert_eq!(
        (r.status, message(&r)),
        (500, "SSH public key validation error\n".to_string())
    );
    // Several keys, one per line, are fine.
    let two = format!("{KEY}\n{}", KEY.replace("ops@", "dev@"));
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("sshkeys={}", form_escape(&form_escape(&two))),
    )
    .await;
    assert_eq!(r.status, 200);
    // ipconfigN follows `pve-qm-ipconfig`.
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("ipconfig0={}", form_escape("ip=10.0.0.5")),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["errors"]["ipconfig0"],
        "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a \
         valid ipv4 network configuration\n"
    );
    let r = put(
        &sim,
        "/nodes/pve1/qemu/104/config",
        &format!("ipconfig1={}", form_escape("ip6=auto,gw=10.0.0.1")),
    )
    .await;
    assert_eq!(
        r.json()["errors"]["ipconfig1"],
        "invalid format - format error\nipconfig1.ip: missing property required by 'ipconfig1.gw'\n"
    );
    let r = put(&sim, "/nodes/pve1/qemu/104/config", "citype=cloudbase").await;
    assert_eq!(r.status, 400);
    // Regenerating: the lock and the permission.
    let r = put(&sim, "/nodes/pve2/qemu/103/cloudinit", "").await;
    assert_eq!(message(&r), "VM is locked (backup)\n");
    let r = as_auditor(&sim, "PUT", "/nodes/pve1/qemu/100/cloudinit", "").await;
    assert_eq!(
        message(&r),
        "Permission check failed (/vms/100, VM.Config.Cloudinit)\n"
    );
    only_violations(
        &sim,
        &[
            "PUT /nodes/pve1/qemu/104/config: sshkeys:",
            "PUT /nodes/pve1/qemu/104/config: ipconfig0:",
            "PUT /nodes/pve1/qemu/104/config: ipconfig1:",
            "PUT /nodes/pve1/qemu/104/config: citype:",
        ],
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn new_vms_get_their_cloud_init_drive() {
    let sim = sim().await;
    sim.set_task_duration(Duration::from_millis(50));
    let form = format!(
        "vmid=120&name=ci-vm&ide2={}&net0={}&ciuser=root&cipassword=pw&ipconfig0=ip%3Ddhcp&scsi0={}",
        form_escape("local-lvm:cloudinit"),
        form_escape("virtio,bridge=vmbr0"),
        form_escape("local-lvm:8")
    );
    let t = run(&sim, post(&sim, "/nodes/pve1/qemu", &form).await).await;
    assert_eq!(t.exitstatus.as_deref(), Some("OK"));
    assert!(
        t.log.iter().any(
            |l| l == "ide2: successfully created disk 'local-lvm:vm-120-cloudinit,media=cdrom'"
        ),
        "{:?}",
        t.log
    );
    let vols = data(&sim, "/nodes/pve1/storage/local-lvm/content?vmid=120").await;
    let ids: Vec<&str> = vols
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["volid"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["local-lvm:vm-120-cloudinit", "local-lvm:vm-120-disk-0"]
    );
    let user = data(&sim, "/nodes/pve1/qemu/120/cloudinit/dump?type=user").await;
    let user = user.as_str().unwrap();
    assert!(
        user.contains("\nuser: root\ndisable_root: False\npassword: $5$"),
        "{user}"
    );
    assert!(
        !user.contains("users:"),
        "root gets no default user: {user}"
    );
    // A second cloud-init drive fails the create task; no VM is left.
    let form = format!(
        "vmid=121&ide2={0}&ide0={0}",
        form_escape("local-lvm:cloudinit")
    );
    let t = run(&sim, post(&sim, "/nodes/pve1/qemu", &form).await).await;
    assert_eq!(
        t.exitstatus.as_deref(),
        Some("unable to create VM 121 - ide2 - cloud-init drive is already attached at 'ide0'")
    );
    assert!(sim.guest(121).is_none());
    let r = post(
        &sim,
        "/nodes/pve1/qemu",
        &format!("vmid=122&sshkeys={}", form_escape("garbage")),
    )
    .await;
    assert_eq!(message(&r), "SSH public key validation error\n");
    no_violations(&sim);
    sim.shutdown().await;
}
