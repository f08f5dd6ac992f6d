//! A node's disks (pve-storage's `PVE::API2::Disks` over
//! `PVE::Diskmanage`): `GET /nodes/{node}/disks/list` and `GET
//! /nodes/{node}/disks/smart`, in the shapes `get_disks` and
//! `get_smart_data` build from lsblk, udev and `smartctl -H -A -f brief`.
//!
//! Seed:
//!
//! | node | disk | what | health | wearout | used |
//! |---|---|---|---|---|---|
//! | pve1 | nvme0n1 | Samsung PM9A3 1.92 TB | PASSED | 97 | LVM (local-lvm) |
//! | pve1 | sda | Samsung PM883 480 GB (installer disk) | PASSED | 99 | BIOS boot |
//! | pve1 | sdb, sdc | Seagate Exos 4 TB | PASSED | N/A | LVM (osd.0, osd.1) |
//! | pve2 | nvme0n1 | WD Red SN700 1 TB | PASSED | 88 | LVM (local-lvm) |
//! | pve2 | sda | Samsung 860 EVO 500 GB (installer disk) | PASSED | **4** (worn) | BIOS boot |
//! | pve2 | sdb | WD Red 4 TB | **FAILED!** | N/A | LVM (osd.2) |
//! | pve2 | sdc | WD Red 4 TB | PASSED | N/A | LVM (osd.3) |
//! | lab1 | nvme0n1 | Samsung 970 EVO Plus 1 TB (installer disk) | PASSED | 92 | BIOS boot |
//! | lab1 | sda | Crucial MX500 2 TB | PASSED | 98 | (unused) |

use serde_json::{Map, Value, json};

use super::{Ctx, pbool};
use crate::errors::{ApiError, HandlerResult, Reply};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hdd,
    Ssd,
    Nvme,
}

/// What a disk is used for.
#[derive(Clone, Copy)]
enum Use {
    /// The installer's layout: BIOS boot, EFI (mounted), LVM.
    Installer,
    /// A whole-disk LVM physical volume.
    Lvm,
    /// A Ceph OSD (ceph-volume LVM, bluestore).
    Osd(u32),
    Unused,
}

struct Disk {
    dev: &'static str,
    kind: Kind,
    model: &'static str,
    serial: &'static str,
    wwn: &'static str,
    size: u64,
    rpm: u32,
    usage: Use,
    smart: Smart,
}

/// What `smartctl` reports.
enum Smart {
    /// ATA: health and the attribute table (`id`, name, flags, value,
    /// worst, threshold, fail, raw).
    Ata(&'static str, &'static [Attr]),
    /// NVMe: health, percentage used, and the text section.
    Nvme(&'static str, u32, &'static str),
}

type Attr = (
    &'static str,
    &'static str,
    &'static str,
    u32,
    u32,
    u32,
    &'static str,
    &'static str,
);

const EXOS: &[Attr] = &[
    (
        "  1",
        "Raw_Read_Error_Rate",
        "POSR--",
        77,
        64,
        44,
        "-",
        "52903432",
    ),
    ("  3", "Spin_Up_Time", "PO----", 94, 93, 0, "-", "0"),
    ("  4", "Start_Stop_Count", "-O--CK", 100, 100, 20, "-", "27"),
    (
        "  5",
        "Reallocated_Sector_Ct",
        "PO--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    (
        "  7",
        "Seek_Error_Rate",
        "POSR--",
        87,
        60,
        45,
        "-",
        "491255127",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 79, 79, 0, "-", "18712"),
    (" 10", "Spin_Retry_Count", "PO--C-", 100, 100, 97, "-", "0"),
    (
        " 12",
        "Power_Cycle_Count",
        "-O--CK",
        100,
        100,
        20,
        "-",
        "27",
    ),
    ("187", "Reported_Uncorrect", "-O--CK", 100, 100, 0, "-", "0"),
    (
        "190",
        "Airflow_Temperature_Cel",
        "-O---K",
        66,
        52,
        40,
        "-",
        "34 (Min/Max 29/41)",
    ),
    (
        "194",
        "Temperature_Celsius",
        "-O---K",
        34,
        48,
        0,
        "-",
        "34 (0 20 0 0 0)",
    ),
    (
        "197",
        "Current_Pending_Sector",
        "-O--C-",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "198",
        "Offline_Uncorrectable",
        "----C-",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "199",
        "UDMA_CRC_Error_Count",
        "-OSRCK",
        200,
        200,
        0,
        "-",
        "0",
    ),
];

const WD_RED_OK: &[Attr] = &[
    (
        "  1",
        "Raw_Read_Error_Rate",
        "POSR-K",
        200,
        200,
        51,
        "-",
        "0",
    ),
    ("  3", "Spin_Up_Time", "POS--K", 178, 176, 21, "-", "8083"),
    ("  4", "Start_Stop_Count", "-O--CK", 100, 100, 0, "-", "61"),
    (
        "  5",
        "Reallocated_Sector_Ct",
        "PO--CK",
        200,
        200,
        140,
        "-",
        "0",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 63, 63, 0, "-", "27311"),
    (" 12", "Power_Cycle_Count", "-O--CK", 100, 100, 0, "-", "61"),
    (
        "194",
        "Temperature_Celsius",
        "-O---K",
        117,
        104,
        0,
        "-",
        "35",
    ),
    (
        "197",
        "Current_Pending_Sector",
        "-O--CK",
        200,
        200,
        0,
        "-",
        "0",
    ),
    (
        "198",
        "Offline_Uncorrectable",
        "----CK",
        100,
        253,
        0,
        "-",
        "0",
    ),
    (
        "199",
        "UDMA_CRC_Error_Count",
        "-O--CK",
        200,
        200,
        0,
        "-",
        "0",
    ),
];

const WD_RED_FAILING: &[Attr] = &[
    (
        "  1",
        "Raw_Read_Error_Rate",
        "POSR-K",
        197,
        197,
        51,
        "-",
        "4411",
    ),
    ("  3", "Spin_Up_Time", "POS--K", 178, 176, 21, "-", "8091"),
    ("  4", "Start_Stop_Count", "-O--CK", 100, 100, 0, "-", "61"),
    (
        "  5",
        "Reallocated_Sector_Ct",
        "PO--CK",
        1,
        1,
        140,
        "FAILING_NOW",
        "2008",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 63, 63, 0, "-", "27309"),
    (" 12", "Power_Cycle_Count", "-O--CK", 100, 100, 0, "-", "61"),
    (
        "194",
        "Temperature_Celsius",
        "-O---K",
        115,
        104,
        0,
        "-",
        "37",
    ),
    (
        "196",
        "Reallocated_Event_Count",
        "-O--CK",
        1,
        1,
        0,
        "-",
        "1873",
    ),
    (
        "197",
        "Current_Pending_Sector",
        "-O--CK",
        200,
        200,
        0,
        "-",
        "24",
    ),
    (
        "198",
        "Offline_Uncorrectable",
        "----CK",
        100,
        253,
        0,
        "-",
        "0",
    ),
    (
        "199",
        "UDMA_CRC_Error_Count",
        "-O--CK",
        200,
        200,
        0,
        "-",
        "0",
    ),
];

const PM883: &[Attr] = &[
    (
        "  5",
        "Reallocated_Sector_Ct",
        "PO--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 96, 96, 0, "-", "18713"),
    (" 12", "Power_Cycle_Count", "-O--CK", 99, 99, 0, "-", "27"),
    ("177", "Wear_Leveling_Count", "PO--C-", 99, 99, 5, "-", "14"),
    (
        "179",
        "Used_Rsvd_Blk_Cnt_Tot",
        "PO--C-",
        100,
        100,
        10,
        "-",
        "0",
    ),
    (
        "181",
        "Program_Fail_Cnt_Total",
        "-O--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    (
        "182",
        "Erase_Fail_Count_Total",
        "-O--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    ("183", "Runtime_Bad_Block", "PO--C-", 100, 100, 10, "-", "0"),
    (
        "187",
        "Uncorrectable_Error_Cnt",
        "-O--CK",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "190",
        "Airflow_Temperature_Cel",
        "-O--CK",
        71,
        58,
        0,
        "-",
        "29",
    ),
    ("195", "ECC_Error_Rate", "-O-RC-", 200, 200, 0, "-", "0"),
    ("199", "CRC_Error_Count", "-OSRCK", 100, 100, 0, "-", "0"),
    (
        "241",
        "Total_LBAs_Written",
        "-O--CK",
        99,
        99,
        0,
        "-",
        "61977431221",
    ),
];

const EVO_860_WORN: &[Attr] = &[
    (
        "  5",
        "Reallocated_Sector_Ct",
        "PO--CK",
        99,
        99,
        10,
        "-",
        "12",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 93, 93, 0, "-", "33187"),
    (" 12", "Power_Cycle_Count", "-O--CK", 99, 99, 0, "-", "211"),
    ("177", "Wear_Leveling_Count", "PO--C-", 4, 4, 0, "-", "2911"),
    (
        "179",
        "Used_Rsvd_Blk_Cnt_Tot",
        "PO--C-",
        99,
        99,
        10,
        "-",
        "12",
    ),
    (
        "181",
        "Program_Fail_Cnt_Total",
        "-O--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    (
        "182",
        "Erase_Fail_Count_Total",
        "-O--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    ("183", "Runtime_Bad_Block", "PO--C-", 99, 99, 10, "-", "12"),
    (
        "187",
        "Uncorrectable_Error_Cnt",
        "-O--CK",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "190",
        "Airflow_Temperature_Cel",
        "-O--CK",
        67,
        52,
        0,
        "-",
        "33",
    ),
    ("195", "ECC_Error_Rate", "-O-RC-", 200, 200, 0, "-", "0"),
    ("199", "CRC_Error_Count", "-OSRCK", 100, 100, 0, "-", "0"),
    ("235", "POR_Recovery_Count", "-O--C-", 99, 99, 0, "-", "63"),
    (
        "241",
        "Total_LBAs_Written",
        "-O--CK",
        99,
        99,
        0,
        "-",
        "1224883729120",
    ),
];

const MX500: &[Attr] = &[
    (
        "  1",
        "Raw_Read_Error_Rate",
        "POSR-K",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "  5",
        "Reallocate_NAND_Blk_Cnt",
        "-O--CK",
        100,
        100,
        10,
        "-",
        "0",
    ),
    ("  9", "Power_On_Hours", "-O--CK", 100, 100, 0, "-", "5210"),
    (" 12", "Power_Cycle_Count", "-O--CK", 100, 100, 0, "-", "88"),
    (
        "173",
        "Ave_Block-Erase_Count",
        "-O--CK",
        98,
        98,
        0,
        "-",
        "31",
    ),
    (
        "194",
        "Temperature_Celsius",
        "-O---K",
        69,
        51,
        0,
        "-",
        "31 (Min/Max 18/49)",
    ),
    (
        "197",
        "Current_Pending_ECC_Cnt",
        "-O--CK",
        100,
        100,
        0,
        "-",
        "0",
    ),
    (
        "202",
        "Percent_Lifetime_Remain",
        "P---CK",
        98,
        98,
        1,
        "-",
        "2",
    ),
    (
        "246",
        "Total_LBAs_Written",
        "-O--CK",
        100,
        100,
        0,
        "-",
        "9214332113",
    ),
];

const PM9A3_TEXT: &str = "SMART/Health Information (NVMe Log 0x02)
Critical Warning:                   0x00
Temperature:                        38 Celsius
Available Spare:                    100%
Available Spare Threshold:          10%
Percentage Used:                    3%
Data Units Read:                    48,113,024 [24.6 TB]
Data Units Written:                 61,977,431 [31.7 TB]
Host Read Commands:                 512,839,227
Host Write Commands:                1,187,112,004
Controller Busy Time:               1,702
Power Cycles:                       27
Power On Hours:                     18,713
Unsafe Shutdowns:                   9
Media and Data Integrity Errors:    0
Error Information Log Entries:      0
Warning  Comp. Temperature Time:    0
Critical Comp. Temperature Time:    0
Temperature Sensor 1:               38 Celsius
Temperature Sensor 2:               45 Celsius
";

const SN700_TEXT: &str = "SMART/Health Information (NVMe Log 0x02)
Critical Warning:                   0x00
Temperature:                        41 Celsius
Available Spare:                    100%
Available Spare Threshold:          10%
Percentage Used:                    12%
Data Units Read:                    91,411,220 [46.8 TB]
Data Units Written:                 377,103,887 [193 TB]
Host Read Commands:                 1,004,221,913
Host Write Commands:                6,118,330,127
Controller Busy Time:               9,913
Power Cycles:                       61
Power On Hours:                     27,310
Unsafe Shutdowns:                   14
Media and Data Integrity Errors:    0
Error Information Log Entries:      0
Warning  Comp. Temperature Time:    0
Critical Comp. Temperature Time:    0
";

const EVO_970_TEXT: &str = "SMART/Health Information (NVMe Log 0x02)
Critical Warning:                   0x00
Temperature:                        44 Celsius
Available Spare:                    100%
Available Spare Threshold:          10%
Percentage Used:                    8%
Data Units Read:                    22,017,554 [11.2 TB]
Data Units Written:                 41,203,118 [21.0 TB]
Host Read Commands:                 301,554,210
Host Write Commands:                702,119,835
Controller Busy Time:               2,117
Power Cycles:                       88
Power On Hours:                     5,214
Unsafe Shutdowns:                   21
Media and Data Integrity Errors:    0
Error Information Log Entries:      0
Warning  Comp. Temperature Time:    0
Critical Comp. Temperature Time:    0
Temperature Sensor 1:               44 Celsius
Temperature Sensor 2:               50 Celsius
";

const TB4: u64 = 4_000_787_030_016;

fn disks(node: &str) -> Vec<Disk> {
    let exos = |dev, serial, wwn, osd| Disk {
        dev,
        kind: Kind::Hdd,
        model: "ST4000NM000A-2HZ100",
        serial,
        wwn,
        size: TB4,
        rpm: 7200,
        usage: Use::Osd(osd),
        smart: Smart::Ata("PASSED", EXOS),
    };
    let red = |dev, serial, wwn, osd, smart| Disk {
        dev,
        kind: Kind::Hdd,
        model: "WDC WD40EFRX-68N32N0",
        serial,
        wwn,
        size: TB4,
        rpm: 5400,
        usage: Use::Osd(osd),
        smart,
    };
    match node {
        "pve1" => vec![
            Disk {
                dev: "nvme0n1",
                kind: Kind::Nvme,
                model: "SAMSUNG MZQL21T9HCJR-00A07",
                serial: "S64GNE0R812345",
                wwn: "eui.36344730528123450025384500000001",
                size: 1_920_383_410_176,
                rpm: 0,
                usage: Use::Lvm,
                smart: Smart::Nvme("PASSED", 3, PM9A3_TEXT),
            },
            Disk {
                dev: "sda",
                kind: Kind::Ssd,
                model: "SAMSUNG MZ7LH480HAHQ-00005",
                serial: "S45PNA0M612345",
                wwn: "0x5002538e40a1b2c3",
                size: 480_103_981_056,
                rpm: 0,
                usage: Use::Installer,
                smart: Smart::Ata("PASSED", PM883),
            },
            exos("sdb", "ZC1A2B3C", "0x5000c500d1a2b3c4", 0),
            exos("sdc", "ZC1A2B9F", "0x5000c500d1a2b9f1", 1),
        ],
        "pve2" => vec![
            Disk {
                dev: "nvme0n1",
                kind: Kind::Nvme,
                model: "WD Red SN700 1000GB",
                serial: "22301Q800123",
                wwn: "eui.e8238fa6bf530001001b448b4a1c2d3e",
                size: 1_000_204_886_016,
                rpm: 0,
                usage: Use::Lvm,
                smart: Smart::Nvme("PASSED", 12, SN700_TEXT),
            },
            Disk {
                dev: "sda",
                kind: Kind::Ssd,
                model: "Samsung SSD 860 EVO 500GB",
                serial: "S3Z2NB0K712345X",
                wwn: "0x5002538e4071a2b3",
                size: 500_107_862_016,
                rpm: 0,
                usage: Use::Installer,
                smart: Smart::Ata("PASSED", EVO_860_WORN),
            },
            red(
                "sdb",
                "WD-WCC7K1ABC123",
                "0x50014ee2b1c2d3e4",
                2,
                Smart::Ata("FAILED!", WD_RED_FAILING),
            ),
            red(
                "sdc",
                "WD-WCC7K1ABC456",
                "0x50014ee2b1c2d9a7",
                3,
                Smart::Ata("PASSED", WD_RED_OK),
            ),
        ],
        "lab1" => vec![
            Disk {
                dev: "nvme0n1",
                kind: Kind::Nvme,
                model: "Samsung SSD 970 EVO Plus 1TB",
                serial: "S4EWNX0R123456A",
                wwn: "eui.0025385391b2c3d4",
                size: 1_000_204_886_016,
                rpm: 0,
                usage: Use::Installer,
                smart: Smart::Nvme("PASSED", 8, EVO_970_TEXT),
            },
            Disk {
                dev: "sda",
                kind: Kind::Ssd,
                model: "CT2000MX500SSD1",
                serial: "2312E6A1B2C3",
                wwn: "0x500a0751e6a1b2c3",
                size: 2_000_398_934_016,
                rpm: 0,
                usage: Use::Unused,
                smart: Smart::Ata("PASSED", MX500),
            },
        ],
        _ => Vec::new(),
    }
}

/// `get_wear_leveling_info`: 100 minus the NVMe percentage used, or the
/// value of the first known wear attribute.
fn wearout(d: &Disk) -> Option<u32> {
    const REGISTERS: &[&str] = &[
        "Media_Wearout_Indicator",
        "SSD_Life_Left",
        "Wear_Leveling_Count",
        "Perc_Write/Erase_Ct_BC",
        "Perc_Rated_Life_Remain",
        "Remaining_Lifetime_Perc",
        "Percent_Lifetime_Remain",
        "Lifetime_Left",
        "PCT_Life_Remaining",
        "Lifetime_Remaining",
        "Percent_Life_Remaining",
        "Percent_Lifetime_Used",
        "Perc_Rated_Life_Used",
    ];
    match d.smart {
        Smart::Nvme(_, used, _) => Some(100 - used),
        Smart::Ata(_, attrs) => REGISTERS
            .iter()
            .find_map(|r| attrs.iter().find(|a| a.1.contains(r)).map(|a| a.3)),
    }
}

fn health(d: &Disk) -> &'static str {
    match d.smart {
        Smart::Ata(h, _) | Smart::Nvme(h, _, _) => h,
    }
}

fn devpath(dev: &str) -> String {
    format!("/dev/{dev}")
}

fn by_id(d: &Disk) -> String {
    let model = d.model.replace(' ', "_");
    match d.kind {
        Kind::Nvme => format!("/dev/disk/by-id/nvme-{model}_{}", d.serial),
        _ => format!("/dev/disk/by-id/ata-{model}_{}", d.serial),
    }
}

/// The partitions: `(suffix, size, used, mounted)`.
fn partitions(d: &Disk) -> Vec<(String, u64, &'static str, bool)> {
    if !matches!(d.usage, Use::Installer) {
        return Vec::new();
    }
    let p = if d.kind == Kind::Nvme { "p" } else { "" };
    let efi = 1_073_741_824;
    vec![
        (format!("{p}1"), 1_031_168, "BIOS boot", false),
        (format!("{p}2"), efi, "EFI", true),
        (format!("{p}3"), d.size - 1_075_838_976, "LVM", false),
    ]
}

/// A disk's `get_disks` entry, and its partitions' when asked for.
fn entries(d: &Disk, smart: bool, with_parts: bool) -> Vec<(String, Map<String, Value>)> {
    let dev = devpath(d.dev);
    let (health, wear) = if smart {
        let wear = match d.kind {
            Kind::Hdd => None,
            _ => wearout(d),
        };
        (health(d), wear)
    } else {
        ("UNKNOWN", None)
    };
    let mut m = Map::new();
    m.insert("devpath".into(), dev.clone().into());
    m.insert(
        "type".into(),
        match d.kind {
            Kind::Hdd => "hdd",
            Kind::Ssd => "ssd",
            Kind::Nvme => "nvme",
        }
        .into(),
    );
    m.insert("size".into(), d.size.into());
    m.insert("model".into(), d.model.into());
    m.insert("serial".into(), d.serial.into());
    m.insert(
        "vendor".into(),
        if d.kind == Kind::Nvme {
            "unknown"
        } else {
            "ATA"
        }
        .into(),
    );
    m.insert("wwn".into(), d.wwn.into());
    // Only the installer partitions its disk; LVM and Ceph take whole
    // disks.
    m.insert("gpt".into(), pbool(matches!(d.usage, Use::Installer)));
    m.insert("rpm".into(), d.rpm.into());
    m.insert("health".into(), health.into());
    m.insert(
        "wearout".into(),
        wear.map_or_else(|| "N/A".into(), Value::from),
    );
    m.insert("by_id_link".into(), by_id(d).into());
    let parts = partitions(d);
    let used = match d.usage {
        Use::Installer if with_parts => Some("partitions"),
        Use::Installer => parts.first().map(|p| p.2),
        Use::Lvm | Use::Osd(_) => Some("LVM"),
        Use::Unused => None,
    };
    if let Some(u) = used {
        m.insert("used".into(), u.into());
    }
    match d.usage {
        Use::Osd(id) => {
            m.insert("osdid".into(), id.into());
            m.insert("osdid-list".into(), json!([id]));
            m.insert("bluestore".into(), 1.into());
            m.insert("osdencrypted".into(), 0.into());
        }
        _ => {
            m.insert("osdid".into(), (-1).into());
            m.insert("osdid-list".into(), Value::Null);
        }
    }
    let gpt = m["gpt"].clone();
    let mut out = vec![(d.dev.to_string(), m)];
    if with_parts {
        for (suffix, size, used, mounted) in parts {
            let name = format!("{}{suffix}", d.dev);
            let mut p = Map::new();
            p.insert("devpath".into(), devpath(&name).into());
            p.insert("parent".into(), dev.clone().into());
            if mounted {
                p.insert("mounted".into(), 1.into());
            }
            p.insert("gpt".into(), gpt.clone());
            p.insert("type".into(), "partition".into());
            p.insert("size".into(), size.into());
            p.insert("used".into(), used.into());
            p.insert("osdid".into(), (-1).into());
            p.insert("osdid-list".into(), Value::Null);
            out.push((name, p));
        }
    }
    out
}

/// `GET /nodes/{node}/disks/list`: `Sys.Audit` on `/` or on the node
/// (PVE's `or` check fails with a bare `Permission check failed`).
pub(crate) fn list(ctx: &Ctx<'_>) -> HandlerResult {
    let node_path = format!("/nodes/{}", ctx.node);
    if !ctx.can("/", "Sys.Audit") && !ctx.can(&node_path, "Sys.Audit") {
        return Err(ApiError::new(403, "Permission check failed\n"));
    }
    let smart = ctx.params.get("skipsmart") != Some("1");
    let parts = ctx.params.get("include-partitions") == Some("1");
    let ty = ctx.params.get("type").unwrap_or("");
    let mut all: Vec<(String, Map<String, Value>)> = disks(ctx.node)
        .iter()
        .flat_map(|d| entries(d, smart, parts))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let out = all
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| {
            let used = m.get("used").and_then(Value::as_str);
            match ty {
                "unused" => used.is_none(),
                "journal_disks" => {
                    m["osdid"].as_i64() < Some(0)
                        && used.is_none_or(|u| (u == "partitions" && m["gpt"] == 1) || u == "LVM")
                }
                _ => true,
            }
        })
        .map(Value::Object)
        .collect();
    Ok(Reply::Data(Value::Array(out)))
}

/// `GET /nodes/{node}/disks/smart?disk=/dev/...[&healthonly=1]`.
pub(crate) fn smart(ctx: &Ctx<'_>) -> HandlerResult {
    let path = ctx.params.get("disk").unwrap_or("");
    let all = disks(ctx.node);
    let Some(d) = all.iter().find(|d| devpath(d.dev) == path) else {
        return Err(ApiError::new(500, "not a valid block device\n"));
    };
    if ctx.params.get("healthonly") == Some("1") {
        return Ok(Reply::Data(json!({"health": health(d)})));
    }
    let out = match d.smart {
        Smart::Ata(health, attrs) => {
            let attributes: Vec<Value> = attrs
                .iter()
                .map(|(id, name, flags, value, worst, thresh, fail, raw)| {
                    json!({
                        "id": id,
                        "name": name,
                        "flags": flags,
                        "value": value,
                        "normalized": value,
                        "worst": worst,
                        "threshold": thresh,
                        "fail": fail,
                        "raw": raw,
                    })
                })
                .collect();
            json!({"health": health, "type": "ata", "attributes": attributes})
        }
        Smart::Nvme(health, used, text) => json!({
            "health": health,
            "type": "text",
            "text": format!("\n{text}\n"),
            "wearout": 100 - used,
        }),
    };
    Ok(Reply::Data(out))
}
