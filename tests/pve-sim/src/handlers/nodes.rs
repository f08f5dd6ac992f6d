//! `/nodes` and `/nodes/{node}/status`.

use serde_json::{Value, json};

use super::cluster::node_entry;
use super::{Ctx, frac};
use crate::errors::{ApiError, HandlerResult, Reply};

pub(crate) fn index(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    let mut nodes: Vec<_> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let list = nodes
        .into_iter()
        .map(|n| {
            let audit = ctx.can(&format!("/nodes/{}", n.name), "Sys.Audit");
            let mut m = node_entry(n, audit);
            // One simulated server serves every node, so they share its
            // certificate (real nodes each have their own).
            m.insert(
                "ssl_fingerprint".into(),
                ctx.shared.fingerprint.clone().into(),
            );
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Data(Value::Array(list)))
}

const CPU_FLAGS: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 \
    clflush mmx fxsr sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl \
    xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 \
    x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpb hw_pstate \
    ssbd ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 rdseed adx smap clflushopt clwb \
    sha_ni xsaveopt xsavec xgetbv1 xsaves arat npt lbrv svm_lock nrip_save";

pub(crate) fn status(ctx: &Ctx<'_>) -> HandlerResult {
    let c = ctx.cluster();
    // The pipeline only lets known online nodes through; this guards the
    // handler if it is ever reached another way.
    let Some(n) = c.node(ctx.node) else {
        return Err(ApiError::new(500, format!("no such node '{}'\n", ctx.node)));
    };
    let mem_free = n.maxmem.saturating_sub(n.mem);
    let rootfs_free = n.rootfs_total.saturating_sub(n.rootfs_used);
    let mut data = json!({
        "uptime": n.uptime,
        "idle": 0,
        "loadavg": n.loadavg,
        "kversion": format!("Linux {} {}", n.kernel_release, n.kernel_version),
        "current-kernel": {
            "sysname": "Linux",
            "release": n.kernel_release,
            "version": n.kernel_version,
            "machine": "x86_64",
        },
        "cpuinfo": {
            "model": n.cpu_model,
            "sockets": n.sockets,
            "cores": n.cores,
            "cpus": n.threads,
            "mhz": n.mhz,
            "hvm": "1",
            "flags": CPU_FLAGS,
            "user_hz": 100,
        },
        "cpu": frac(n.cpu),
        "wait": frac(n.wait),
        "memory": {
            "total": n.maxmem,
            "used": n.mem,
            "free": mem_free,
            "available": mem_free + mem_free / 8,
        },
        "ksm": {"shared": n.ksm_shared},
        "swap": {
            "total": n.swap_total,
            "used": n.swap_used,
            "free": n.swap_total.saturating_sub(n.swap_used),
        },
        "pveversion": c.release_of(&n.name).manager_text(),
        "rootfs": {
            "total": n.rootfs_total,
            "used": n.rootfs_used,
            "free": rootfs_free,
            "avail": rootfs_free,
        },
    });
    data["boot-info"] = if n.boot_efi {
        json!({"mode": "efi", "secureboot": 0})
    } else {
        json!({"mode": "legacy-bios"})
    };
    Ok(Reply::Data(data))
}
