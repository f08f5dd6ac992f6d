//! A Proxmox VE API simulator.
//!
//! It serves `https://127.0.0.1:PORT/api2/json/...` with a deterministic,
//! seeded cluster and mimics what real PVE puts on the wire: reason phrases
//! that carry error messages, Perl-typed JSON (0/1 booleans, absent "false"
//! keys), API-token and ticket authentication, ACL checks before handlers,
//! list filtering, proxy errors for an offline node, and optional request
//! validation against the official `apidata.json` schema.
//!
//! pve-mcp's end-to-end tests drive it, and `pve-mcp demo` embeds it, so it
//! is built to start fast and to answer every input without panicking.
//!
//! # The standard cluster
//!
//! Standard seed (`demo-cluster`; `pve1` answers, `pve2` online, `pve3`
//! offline):
//!
//! | vmid | type | name                  | node | state   | notable |
//! |------|------|-----------------------|------|---------|---------|
//! | 100  | qemu | web-frontend-01       | pve1 | running | tags `prod;web`, pool `production`, HA (group `prod-ha`), agent |
//! | 101  | qemu | db-primary            | pve1 | running | tags `db;prod`, pool `production`, no agent, no HA |
//! | 102  | qemu | win-build-agent       | pve2 | paused  | qmpstatus `paused`, agent |
//! | 103  | qemu | mail-gateway          | pve2 | running | lock `backup`, HA (group `prod-ha`), agent |
//! | 104  | qemu | dev-sandbox           | pve1 | stopped | tags `dev` |
//! | 105  | qemu | legacy-erp            | pve3 | unknown | node offline |
//! | 106  | lxc  | dns-resolver-01       | pve1 | running | tags `infra`, HA without group |
//! | 107  | lxc  | reverse-proxy         | pve2 | running | tags `prod;web` |
//! | 108  | lxc  | ci-runner             | pve1 | stopped | |
//! | 109  | lxc  | monitoring            | pve3 | unknown | node offline |
//! | 110  | qemu | (none → `VM 110`)     | pve2 | stopped | no name in config |
//! | 200  | lxc  | debian-12-template    | pve1 | stopped | template |
//! | 900  | qemu | ubuntu-2404-cloudinit | pve1 | stopped | template, agent |
//!
//! [`AUDITOR_VISIBLE_VMIDS`] lists what the auditor token may see. The
//! large scenario adds guests `1000..` named `load-vm-NNNNN` /
//! `load-ct-NNNNN` round-robin over the three nodes.
//!
//! # Read-catalog seed data (standard cluster)
//!
//! - **Config**: qemu `memory` is a string, `agent` is `"1"` (100, 102,
//!   103, 110, 900); 101 has `virtio0`/`virtio1`, `net0`/`net1` and a
//!   multi-line `description`; 102 is `win11` with OVMF; 900 is the
//!   cloud-init template (`ciuser: ubuntu`, `cipassword: "**********"`,
//!   URI-escaped `sshkeys`); 103 has `lock: backup`; 200 and 900 have
//!   `template: 1`. Guests with snapshots carry `parent`.
//! - **Snapshots**: 100 has `pre_upgrade` → `post_upgrade` → `kernel_617`
//!   (current's parent, vmstate 1) plus the branch `test_branch` (parent
//!   `pre_upgrade`, vmstate 1); 106 (lxc) has `before_bind_update`; the
//!   others have only `current`.
//! - **Storage**: `local` (dir; backup,iso,vztmpl), `local-lvm` (lvmthin;
//!   images,rootdir), `nfs-backup` (nfs, shared; backup), `nfs-images`
//!   (nfs, shared; images,import,rootdir; empty: where disks move to and
//!   imports download to). `nfs-backup` holds
//!   9 backups: 100 ×3 (newest with notes), 101 ×2, 106 ×2, 107 ×1
//!   (protected, notes), 103 ×1. `local` on pve1: 104 (protected), 108, an
//!   ISO and a CT template; on pve2: 110 and an ISO. `local-lvm` lists the
//!   guests' disks and VM 900's cloud-init drive.
//! - **Cloud-init**: VM 900's drive was generated for `ciuser: admin` and
//!   `ipconfig0: ip=dhcp` (PVE's `[special:cloudinit]` record), so
//!   `GET .../cloudinit` shows `ciuser` pending (`admin` → `ubuntu`). Its
//!   stored `cipassword` is a `$5$...` hash, masked as `**********` in
//!   every config answer; host DNS for generated data is search `demo.lan`,
//!   nameserver `192.0.2.1`.
//! - **Network** (`/etc/network/interfaces` per node): `eno1`, `eno2`
//!   (physical), `vmbr0` on `eno1` with the node's address
//!   (`192.0.2.1x/24`, gateway `192.0.2.1`), VLAN-aware `vmbr1` on `eno2`
//!   without an address. `pve2` has a pending `interfaces.new` adding
//!   `vmbr2` (`10.10.10.12/24`, no ports, MTU 9000), not active; its list
//!   carries the diff as a top-level `changes`.
//! - **Appliances** (`aplinfo`): `debian-12-standard_12.12-1` (already on
//!   pve1's `local`), `debian-13-standard_13.1-2`,
//!   `ubuntu-24.04-standard_24.04-2`, `alpine-3.20-default_20240908` and
//!   TurnKey WordPress `18.1-1`.
//! - **Agent** (`network-get-interfaces`): 100 answers (`lo`, `eth0` with
//!   `10.0.0.100/24`); 101/104 → `No QEMU guest agent configured`; 110 and
//!   900 → `VM <id> is not running`; 102 (paused) and 103 (hung agent) →
//!   `QEMU guest agent is not running`. LXC `interfaces`: running CTs 106
//!   (`10.0.0.106/24`), 107; stopped 108/200 → `CT <id> not running`.
//!   Guest IPv4 is `10.0.<vmid/250>.<vmid%250>`.
//! - **Guest agent** (`agent/info`, `get-osinfo`, `get-host-name`,
//!   `get-fsinfo`, `get-users`, `get-timezone`, `get-time`, `get-vcpus`,
//!   `exec`, `exec-status`, `file-read`, `file-write`): the same checks and
//!   texts as above, in PVE's order (config on the node, agent configured,
//!   VM running, agent answering). VM 100 runs Debian 12 (qemu-ga 7.2.11,
//!   host name = VM name): `/` is `sda2`, ext4, 4 GiB and 95 % full,
//!   `/boot` is `sda1`; files `/etc/hostname`, `/etc/os-release`,
//!   `/etc/passwd`, `/etc/shadow`, `/var/log/syslog` (2,000 lines) and the
//!   binary `/usr/bin/tool`. `exec` runs a fake interpreter (the table in
//!   `guest_exec.rs`: `df -h`, `systemctl status`, `cat`, `sleep`, `seq`,
//!   ...; output kept up to 1 MiB, qemu-ga keeps 16 MiB); an unknown
//!   program is `Agent error: Guest agent command failed, error was
//!   'Failed to execute child process “x” (No such file or directory)'`.
//!   A finished process is reported once, then its pid is `Agent error:
//!   Invalid parameter 'pid'`. File writes persist per VM. With
//!   [`Shapes::Real`], VM 111's agent answers every command with its
//!   `Unsupported` error (200 for the passthrough reads, `Agent error:`
//!   500 for exec and files). [`SimConfig::pve8_nodes`] gives PVE 8's
//!   `VM.Monitor` checks and `file-read` without `count`/`decode`/`offset`.
//! - **Tasks** (newest first; node lists need Sys.Audit or ownership):
//!   pve1 has 7 finished tasks, among them [`LONG_LOG_UPID`] (vzdump, OK,
//!   413 log lines), `qmstart 100` by `root@pam!mcp` (OK), `qmstart 104`
//!   (`start failed: QEMU exited with code 1`) and `aptupdate`
//!   (`WARNINGS: 2`); pve2 has a vzdump with `WARNINGS: 2`, `qmshutdown
//!   103` failing with `VM 103 qmp command 'guest-ping' failed - got
//!   timeout`, `qmstart 107`, and a RUNNING `vzdump 103`; pve3 one old
//!   task (only in `/cluster/tasks`). The large scenario adds 5,000 tasks
//!   on pve1/pve2 and one backup per generated guest (up to 5,000).
//! - **HA**: `vm:100`, `vm:103` (group `prod-ha`) and `ct:106`, all
//!   `started`; master and LRMs on pve1/pve2, pve3's LRM is dead (more
//!   under "HA resources, groups and rules").
//! - **Permissions**: root tokens/tickets hold every privilege; the
//!   auditor holds `VM.Audit` on [`AUDITOR_VISIBLE_VMIDS`] only.
//!
//! # Writes
//!
//! The write endpoints of `shared/reference/pve-write-endpoints.md` change
//! the cluster, for qemu and lxc: `status/{start,shutdown,stop,reboot,
//! suspend,resume}`, `snapshot` (create), `snapshot/{name}` (DELETE),
//! `snapshot/{name}/rollback`, `migrate`, `clone`, `POST /nodes/{node}/qemu`
//! and `/lxc` (create, or restore with `archive` / `restore=1`), `DELETE`
//! of a guest, `resize`, `config` (qemu PUT and async POST, lxc PUT),
//! `POST /nodes/{node}/vzdump`, `GET /cluster/nextid` and `DELETE
//! /nodes/{node}/tasks/{upid}`. Beyond the reference: `PUT .../qemu/{vmid}/
//! cloudinit` (regenerate; its reads `GET .../cloudinit` and `.../cloudinit/
//! dump`), `POST .../qemu/{vmid}/move_disk` and `.../lxc/{vmid}/
//! move_volume` (`qmmove` / `move_volume` tasks), `DELETE /nodes/{node}/
//! storage/{storage}/content/{volume}` (`imgdel`; the volid may keep its
//! slashes in the path), `POST .../storage/{storage}/download-url` and
//! `POST /nodes/{node}/aplinfo` (`download` tasks); the reads `GET
//! /nodes/{node}/aplinfo`, `GET /nodes/{node}/network[/{iface}]`.
//!
//! - **Downloads.** The simulated web serves [`download_bytes`] at every
//!   URL ([`download_checksum`] is what a `checksum` must be); a URL with a
//!   `404` path segment answers 404 and fails the task. Sizes are made up
//!   from the URL.
//! - **Tasks.** Asynchronous writes answer a UPID in PVE's format
//!   (`UPID:node:pid:pstart:starttime:type:id:user:`) and run for
//!   [`SimConfig::task_duration`] (default [`DEFAULT_TASK_DURATION`];
//!   [`Simulator::set_task_duration`] and
//!   [`Simulator::set_task_duration_for`] change it per test). Their log
//!   grows while they run (progress lines for vzdump, clone, restore and
//!   migrate, in PVE's wording) and ends with `TASK OK` or `TASK ERROR:
//!   <text>`; the change happens when the task ends. Time is evaluated
//!   lazily on every look, so no thread runs in the background.
//! - **Locks.** Snapshot, rollback, migrate, backup, clone and create tasks
//!   set the guest's config lock (`snapshot`, `snapshot-delete`,
//!   `rollback`, `migrate`, `backup`, `clone`/`create`); power, config POST,
//!   resize and destroy tasks hold its config file lock. Another action
//!   then fails with `VM is locked (<lock>)` / `CT is locked (<lock>)`, or
//!   `can't lock file '/var/lock/qemu-server/lock-<id>.conf' - got
//!   timeout`: before the fork (HTTP 500) where PVE checks there (clone,
//!   config, lxc destroy and resize), else as the task's exit status.
//! - **Pre-checks** answer the reference's texts: already running, not
//!   running, paused, reserved snapshot names, `target is local node.`,
//!   running guest without `online`/`restart`, occupied newid or vmid,
//!   linked clones of non-templates, protection, HA without `purge`, a
//!   running guest on delete, shrinking, stale `digest` (qemu `checksum
//!   mismatch (file change by other user?)`, lxc `detected modified
//!   configuration - ...`), root-only options for tokens.
//! - **HA-managed guests** (100, 103, 106) answer start/stop/shutdown and
//!   migrate with a `hastart`/`hastop`/`hamigrate` task that only queues
//!   the request; the HA manager then runs the real task as `root@pam`
//!   (a migration as `POST /cluster/ha/resources/{sid}/migrate` does).
//! - **Seed facts tests meet:** every disk is on `local-lvm` (local), so a
//!   live qemu migration needs `with-local-disks=1` (the task otherwise
//!   fails `migration aborted`), and a clone with `target` is refused; the
//!   lowest free vmid is 111.
//! - **Digest.** A config's digest covers the whole file, snapshots and
//!   lock included, so every change moves it.
//! - **For tests:** [`Simulator::writes`] (method, path, decoded
//!   [`LoggedRequest::params`]), [`Simulator::guest`] ([`GuestState`]),
//!   [`Simulator::task`] ([`TaskState`]), [`Simulator::running_tasks`],
//!   [`Simulator::set_guest_lock`].
//!
//! # Node health, replication and pools (issue 25)
//!
//! Reads: `GET /nodes/{node}/services` (and `.../services/{service}`,
//! `.../services/{service}/state`), `.../apt/update`, `.../apt/versions`,
//! `.../journal`, `.../syslog`, `.../disks/list`, `.../disks/smart`,
//! `/cluster/ceph/status` (and `/nodes/{node}/ceph/status`),
//! `/cluster/replication[/{id}]`, `/nodes/{node}/replication`,
//! `.../replication/{id}[/status|/log]`, `/pools` and `/pools/{poolid}`;
//! writes: `POST .../replication/{id}/schedule_now`, `POST`/`PUT`/`DELETE
//! /pools` and `PUT`/`DELETE /pools/{poolid}`.
//!
//! - **Services**: all run, but `chrony` failed on `pve2`;
//!   `systemd-timesyncd` is not installed; `lab1` never started corosync.
//! - **Updates**: `pve1` has six (pve-manager 9.1.6, a 6.17.4 kernel and
//!   its new signed image, libpve-common-perl, OpenSSL), `pve2` none,
//!   `lab1` tzdata.
//! - **Journal** (per online node, Nov 27 00:00 to Nov 29 01:01 around
//!   the seed's night of 2026-11-28; 400-600 lines): hourly cron, midnight
//!   log rotation reloading pveproxy/spiceproxy, worker turnover, logins,
//!   every seeded task's start and end, corosync losing `pve3` for 35 s at
//!   04:10 and for good at 15:22 (quorum, pmxcfs resync, the HA manager),
//!   replication `106-0` failing three times before that (`pve1`), the
//!   backup of CT 107 failing the night before and `chrony` failing to
//!   restart (`pve2`), smartd's `FAILED SMART self-check` for `pve2`'s
//!   `/dev/sdb` every half hour.
//! - **Disks**: 4 per primary node, 2 on `lab1` (table in the `disks`
//!   handler): `pve2`'s `/dev/sda` is a worn SSD (wearout 4), its
//!   `/dev/sdb` (osd.2) reports `FAILED!`; `lab1`'s `/dev/sda` is unused.
//! - **Ceph** (primary only; the lab answers `binary not installed:
//!   /usr/bin/ceph-mon`): 3 monitors, 6 OSDs; with `pve3` offline
//!   `HEALTH_WARN` (`MON_DOWN`, `OSD_DOWN`, `OSD_HOST_DOWN`,
//!   `PG_DEGRADED`), 4 of 6 OSDs up and in, 129 PGs undersized+degraded.
//! - **Replication**: `101-0` (pve1 → pve2, `*/15`, 50 MB/s) and `107-0`
//!   (pve2 → pve1, `*/30`) in sync on schedule; `106-0` (pve1 → pve3)
//!   failed 3 times (ssh to pve3: `exit code 255`) and waits for pve3
//!   (`next_sync` 0). `schedule_now` zeroes `last_try`; the simulated
//!   scheduler then runs the job after the `pvesr` task duration
//!   ([`Simulator::set_task_duration_for`]) and it takes as long again.
//! - **Pools**: `production` ("Production workloads": VMs 100, 101 and
//!   storage `nfs-backup`); guests' `pool` and `/cluster/resources` follow
//!   every change.
//! - **Releases**: the primary cluster runs PVE 9.1.5, the secondary PVE
//!   [`PVE8_VERSION`]; [`SimConfig::pve_version`] sets every node's
//!   (e.g. `8.0.9`: pools before nesting), [`SimConfig::pve8_nodes`] single
//!   nodes'.
//!
//! # HA resources, groups and rules (issue 25)
//!
//! pve-ha-manager's API; reads need `Sys.Audit` on `/`, writes
//! `Sys.Console` on `/`. `GET /cluster/ha/status/current`, `GET`/`POST
//! /cluster/ha/resources`, `GET`/`PUT`/`DELETE /cluster/ha/resources/{sid}`,
//! `POST /cluster/ha/resources/{sid}/migrate` and `.../relocate` (`node`),
//! `GET`/`POST /cluster/ha/groups`, `GET`/`PUT`/`DELETE
//! /cluster/ha/groups/{group}`, `GET`/`POST /cluster/ha/rules` (filters
//! `type`, `resource`), `GET`/`PUT`/`DELETE /cluster/ha/rules/{rule}`.
//! `{sid}` is `vm:<vmid>`, `ct:<vmid>` or a bare vmid.
//!
//! - **Seed** (primary): `vm:100` (pve1, comment `customer-facing web
//!   tier`) and `vm:103` (pve2, locked `backup`) in group `prod-ha`,
//!   `ct:106` (pve1) in none; all set `state started`, `max_restart 1`,
//!   `max_relocate 1`, `failback 1`. Groups: `prod-ha` (`nodes pve1,pve2`,
//!   `restricted 1`) and the unused `prefer-pve2` (`nodes pve2:2,pve1:1`,
//!   `nofailback 1`, comment `pve2 first; stays where it was moved to`).
//!   `pve3` is offline. The secondary cluster has no HA configuration.
//! - **Groups or rules, by release.** PVE 9 turns the groups resources use
//!   into node-affinity rules once every node runs PVE 9 and is online,
//!   which `pve3` never is. So the primary (9.1.5) keeps its groups (reads
//!   and writes work), resources keep `group`, `GET /cluster/ha/rules`
//!   shows `prod-ha` as the generated rule `ha-group-prod-ha` (`nodes
//!   pve1,pve2`, `strict 1`, `resources vm:100,vm:103`, comment `Generated
//!   from HA group 'prod-ha'.`, `order 1`) and rule writes fail `cannot
//!   create ha rule: ha groups have not been migrated yet` (`update` the
//!   same). [`Simulator::migrate_ha_groups`] runs that migration: rules
//!   are then `rules.cfg`'s and writable, resources lose `group` (it may
//!   not be set any more: `invalid parameter 'group': ha groups have been
//!   migrated to rules`), and the group endpoints fail `cannot index
//!   groups: ha groups have been migrated to rules` (`read`, `create`,
//!   `update`, `delete`). PVE 8 (the secondary, `pve_version` 8.x, or a
//!   [`SimConfig::pve8_nodes`] node answering) has groups only:
//!   `/cluster/ha/rules[/{rule}]` is 501 `Method 'GET /cluster/ha/rules'
//!   not implemented` before any permission check, `failback` and
//!   `purge` are no parameters (400 `property is not defined in schema
//!   and the schema does not allow additional properties`), resources and
//!   status rows have no `failback`, migrate/relocate answer `null`.
//! - **Shapes.** A resource: `sid`, `type` (`vm`/`ct`), `digest` (SHA-1 of
//!   `resources.cfg`) and the keys set: `state`, `group`, `failback`
//!   (0/1, PVE 9), `max_restart`, `max_relocate`, `comment`; the list adds
//!   `errors.group` for a group that does not exist. A group: `group`,
//!   `type: group`, `nodes` (`pve1:2,pve2`), `restricted`/`nofailback`
//!   (0/1, when set), `comment`, `digest`. A rule: `rule`, `type`
//!   (`node-affinity` with `nodes`, `strict` when set; `resource-affinity`
//!   with `affinity` `positive`/`negative`), `resources` (sorted,
//!   `vm:100,vm:103`), `disable: 1` when set, `comment`, `order`,
//!   `digest`, and `errors` (`{"resources": ["..."]}`) for a rule PVE
//!   would drop: a resource in two node-affinity rules, a
//!   resource-affinity rule with fewer than two resources, a negative one
//!   with more resources than nodes. PVE 9's migrate/relocate answer
//!   `{"sid", "requested-node"}` plus `comigrated-resources` (positive
//!   affinity) and `blocking-resources` (`[{"sid", "cause":
//!   "resource-affinity"}]`) when there are any. Service rows of
//!   `status/current`: `sid`, `node`, `state` (`started`, `starting`,
//!   `migrate`, `relocate`, `request_stop`, `stopped`, `disabled`,
//!   `ignored`, `fence` for a service on offline `pve3`), `crm_state`
//!   (none when `ignored`), `request_state`, `status` (`vm:100 (pve1,
//!   started)`), `max_restart`/`max_relocate` (default 1), `failback` (PVE
//!   9), `group`, `comment`; sorted by sid, ignored services last.
//! - **The HA manager** acts at once (PVE: within its 10 s round). A
//!   service to start is started by a `qmstart`/`vzstart` task, one to stop
//!   (`stopped`, `disabled`) shut down by `qmshutdown`/`vzshutdown`. A
//!   `migrate` moves a running VM live in one `qmigrate` task on the
//!   source node; a `relocate`, a CT, or a stopped guest is shut down
//!   first if running, moved offline (`qmigrate`/`vzmigrate`) and started
//!   again on the target. All are `root@pam` tasks of
//!   [`SimConfig::task_duration`] each (300 ms by default; per type with
//!   [`Simulator::set_task_duration_for`]): a live VM migration takes one
//!   task duration, a relocation three. Meanwhile the service row shows
//!   `migrate`/`relocate` on the source node and the guest has lock
//!   `migrate`; then it is `started` on the target. As in PVE the API
//!   accepts a command the manager then ignores: to a node that is not
//!   online (unknown or `pve3`), to the node the service is on, or while a
//!   negative-affinity partner is there; positive partners move along.
//!   A locked guest's migration fails (`VM is locked (backup)`) and it
//!   stays. After any change the manager moves services where their
//!   group or rule wants them (`failback`: to the highest-priority online
//!   node; `prod-ha`'s nodes are equal, so a service moved to pve2
//!   stays). `POST .../qemu/{vmid}/migrate` of an HA guest queues the
//!   same command (`hamigrate`).
//! - **Errors** (500 unless said): `create resource failed: resource ID
//!   'vm:100' already defined`, `unable to detect SID from VMID - VM/CT
//!   999 does not exist`, `resource 'vm:999' does not exist in cluster`,
//!   `resource 'vm:106' - guest with ID 106 is not a VM` (`... not a
//!   container`), `types does not match`, `unknown section type 'foo'`,
//!   `update resources config failed: detected modified configuration -
//!   file changed by other user? Try again.` (stale `digest`), `update
//!   resources config failed: no such resource 'vm:101'` / `no such option
//!   'x'`, `HA group 'x' does not exist`, `no such resource 'vm:101'`
//!   (GET), `cannot delete service 'vm:101', not HA managed!`, `resource
//!   'vm:101' is not HA managed` (migrate/relocate, also for `ignored`),
//!   `no such ha group 'x'`, `create ha group failed: ha group ID 'x'
//!   already defined`, `delete ha group failed: ha group is used by
//!   service 'vm:100'`, `no such ha rule 'x'`, `create ha rule failed: HA
//!   rule 'x' already defined` / `cannot use unmanaged resource(s)
//!   vm:101.` / `cannot use non-existent node(s) pve7.` / `400 Rule 'x' is
//!   invalid.\nresources: <why>`, `unexpected property 'nodes'` (an option
//!   of the other rule type), `missing value for required option
//!   'affinity'`. Malformed ids are 400 (`invalid format - value does not
//!   look like a valid ha resource id`, `... valid ha node`).
//! - **Deviations.** A guest on offline `pve3` made an HA resource stays in
//!   `fence` (PVE would recover it to another node); `vm:<id>` of a
//!   container is refused on PVE 8 too; the CRM's log is not in the
//!   journal.
//!
//! # Firewall (issue 25)
//!
//! pve-firewall's API at three scopes, each a config file: the cluster's
//! `/cluster/firewall/...` (`cluster.fw`), a node's
//! `/nodes/{node}/firewall/...` (its `host.fw`; proxied to the node) and a
//! guest's `/nodes/{node}/{qemu,lxc}/{vmid}/firewall/...` (`<vmid>.fw`).
//! Reads: the directory indexes, `options`, `rules`, `rules/{pos}`;
//! `aliases`, `ipset`, `ipset/{name}` and `refs` (cluster and guest);
//! `groups`, `groups/{group}`, `groups/{group}/{pos}` (cluster). Writes:
//! `POST rules`, `PUT`/`DELETE rules/{pos}` (and a security group's
//! `POST groups/{group}`, `PUT`/`DELETE groups/{group}/{pos}`), `PUT
//! options`. Privileges: `Sys.Audit`/`Sys.Modify` on `/` (cluster,
//! groups), on `/nodes/{node}` (node), `VM.Audit`/`VM.Config.Network` on
//! `/vms/{vmid}` (guest); the group list and the indexes need none.
//!
//! | scope | options | rules (`pos`: rule) | also |
//! |---|---|---|---|
//! | cluster | `enable: 1`, `policy_in: DROP`, `policy_out: ACCEPT` | 0 `IN ACCEPT -source +management -p tcp -dport 8006`, 1 the same for `22`, 2 `IN Ping(ACCEPT)`, 3 disabled `IN ACCEPT -source monitoring -p tcp -dport 9100` (`ipversion` 4) | IP set `management` (`10.0.0.0/24`, `!10.0.0.66` nomatch, `192.0.2.0/24`), aliases `jumphost` (10.0.0.5) and `monitoring` (10.0.0.109), security group `webserver` (0 `IN ACCEPT -p tcp -dport 80`, 1 `... 443`) |
//! | `pve1` | `enable: 1`, `log_level_in`/`log_level_out: nolog`, `ndp`, `nosmurfs`, `tcpflags: 1` | 0 `IN ACCEPT -i vmbr0 -source 192.0.2.0/24 -p tcp -dport 3128`, 1 `IN ACCEPT -source +management -p udp -dport 161`, 2 `OUT REJECT -p tcp -dport 25 -log warning` | |
//! | VM 100 | `enable`, `dhcp`, `ipfilter: 1`, `policy_in: DROP`, `policy_out: ACCEPT`, `log_level_in: nolog` | 0 `GROUP webserver -i net0`, 1 `IN ACCEPT -source +management -p tcp -dport 22`, 2 `OUT ACCEPT -dest db-primary -p tcp -dport 5432` | IP set `ipfilter-net0` (`10.0.0.100`), alias `db-primary` (10.0.0.101) |
//!
//! Other nodes and guests have no file: empty lists, options `{digest}`.
//! As in pve-firewall:
//!
//! - Lists carry the list's `digest` on every entry (rules also `pos`),
//!   options theirs as a key: SHA-1 hex over each entry's keys in sorted
//!   order as `key:value\n` (`copy_list_with_digest`). A rule shows
//!   `enable` (0/1), `type`, `action` and what it sets of `macro`,
//!   `iface`, `source`, `dest`, `proto`, `dport`, `sport`, `log`,
//!   `icmp-type`, `comment`, plus the `ipversion` its addresses, aliases or
//!   ICMP protocol imply.
//! - `POST rules` puts the rule at position 0 and leaves it disabled
//!   unless `enable` is given; it ignores `pos` and `digest`. `PUT` with a
//!   `moveto` other than `pos` only moves the rule, before the one at
//!   `moveto` (past the end: last); otherwise it sets values (`""` or `-`
//!   removes one), applies `delete` and checks the rule again.
//! - A `digest` that differs (`PUT`/`DELETE rules/{pos}`, `PUT options`)
//!   fails with 500 `detected modified configuration - file changed by
//!   other user? Try again.`; a missing position with `no rule at position
//!   <pos>`, a missing group or IP set with `no such security group '<g>'`
//!   / `no such IPSet '<name>'`. `verify_rule`'s complaints are 400 with
//!   the parameter named (`invalid rule type 'forward' for rule_env 'vm'`,
//!   `no such ipset 'x'`, `unknown macro 'x'`, `missing property - 'dport'
//!   requires this property`, ...), and the `pve-fw-*` formats are checked.
//! - A guest's file is its vmid's: neither the node nor the guest type in
//!   the path is checked (only `options` is proxied to the node).
//! - The cluster's `enable` above 1 stores the current time (the
//!   anti-lockout call) and reads as 0 once more than 60 s old.
//!
//! # Deviations from real PVE
//!
//! - Ticket signatures are HMAC-SHA256 with a per-run key, not RSA; keys are
//!   ECDSA P-256 rather than RSA.
//! - Every node reports the one served certificate's fingerprint.
//! - No gzip, no 3-second delay on 401, 431 instead of a silent drop for
//!   oversized headers, only the `json` format under `/api2`.
//! - Counters are static: uptimes and traffic do not advance.
//! - Config changes apply at once: there is no `[pending]` section, and
//!   `revert` is accepted but does nothing. Cloud-init keys changed by any
//!   config write are recorded as changed since the drive was generated
//!   (PVE records the changes it hot-applies to a running VM); a new
//!   `cipassword` never is, as in PVE. A `cipassword` hash has the
//!   sha256-crypt shape but is a plain SHA-256. Per-key config privileges
//!   (`VM.Config.CPU` for `cores`, ...) are not checked beyond the
//!   method's any-of list.
//! - The firewall filters nothing and has no `log`, `macros` or SDN IP
//!   sets; aliases, IP sets and security groups are read-only (their
//!   writes answer 501). A rule's macro is not expanded to compare its
//!   ports with the rule's; address errors paraphrase Net::IP's texts;
//!   `refs` lists IP sets and aliases sorted by name (PVE: hash order).
//! - The journal endpoint answers plain JSON (PVE streams it gzipped) and
//!   the journal does not grow. Replication works on the guests'
//!   `local-lvm` disks (PVE replicates ZFS only) and `schedule_now` starts
//!   no worker task, as in PVE, but the job runs within a second or so
//!   rather than at the scheduler's next minute. Ceph figures do not move.
//! - Config digests are 40 hex digits of a SHA-256 of the rendered config
//!   and its snapshots (PVE: SHA-1 of the file). RRD series are synthetic but aligned to the
//!   current time (hour: 60 × 60 s; day/week/month/year: 70 × 30 min / 3 h
//!   / 12 h / 1 week; decade for nodes: 70 × 8 weeks).
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let sim = pve_sim::Simulator::start(pve_sim::SimConfig::default()).await?;
//! println!("{} (fingerprint {})", sim.base_url(), sim.leaf_fingerprint());
//! sim.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod auth;
mod conf;
mod digests;
mod errors;
mod faults;
mod firewall;
mod guest_exec;
mod guest_os;
mod ha;
mod handlers;
mod ifaces;
mod journal;
mod journal_seed;
mod log;
mod params;
mod perms;
mod release;
mod replication;
mod router;
mod schema;
mod seed;
mod server;
mod shapes;
mod ssh_keys;
mod state;
pub mod testing;
mod tls;
mod util;
mod view;
mod work;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use handlers::{download_bytes, download_checksum};
pub use release::PVE8_VERSION;
pub use seed::{AUDITOR_VISIBLE_VMIDS, LONG_LOG_UPID};
pub use view::{GuestState, TaskState};
pub use work::DEFAULT_TASK_DURATION;

/// Fixed API tokens the simulator accepts (it is a simulator: these are fake
/// secrets and safe to print).
pub mod tokens {
    /// Full token id of the administrator token. `root@pam` without
    /// privilege separation, so it may do everything.
    pub const ADMIN_TOKEN_ID: &str = "root@pam!mcp";
    /// Secret of [`ADMIN_TOKEN_ID`].
    pub const ADMIN_TOKEN_SECRET: &str = "5d3b1f2e-8c4a-4e6f-9b7d-0a1c2e3f4a5b";
    /// Full token id of the auditor token: `VM.Audit` on
    /// [`crate::AUDITOR_VISIBLE_VMIDS`] only, and no `Sys.Audit` anywhere.
    pub const AUDITOR_TOKEN_ID: &str = "auditor@pve!mcp";
    /// Secret of [`AUDITOR_TOKEN_ID`].
    pub const AUDITOR_TOKEN_SECRET: &str = "9e8d7c6b-5a49-4382-a716-f5e4d3c2b1a0";
    /// Full token id of the operator token: it reads everything (`VM.Audit`,
    /// `Sys.Audit`, `Datastore.Audit` on `/`) and may start, stop and
    /// snapshot guests (`VM.PowerMgmt`, `VM.Snapshot`), but not create,
    /// delete or reconfigure them (no `VM.Allocate`, `VM.Config.*`).
    pub const OPERATOR_TOKEN_ID: &str = "operator@pve!mcp";
    /// Secret of [`OPERATOR_TOKEN_ID`].
    pub const OPERATOR_TOKEN_SECRET: &str = "4a7c2e91-0b3d-4f58-a6e2-7d91c3b5f0e8";
    /// User that can log in with `POST /access/ticket`.
    pub const TICKET_USER: &str = "root@pam";
    /// Password of [`TICKET_USER`].
    pub const TICKET_PASSWORD: &str = "demo-password";
    /// The only API token of the secondary cluster
    /// ([`crate::ClusterFlavor::Secondary`]); unknown to the primary.
    pub const LAB_TOKEN_ID: &str = "root@pam!lab";
    /// Secret of [`LAB_TOKEN_ID`].
    pub const LAB_TOKEN_SECRET: &str = "3c2b1a09-8f7e-4d6c-b5a4-93827160fedc";
    /// Password of [`TICKET_USER`] on the secondary cluster.
    pub const LAB_TICKET_PASSWORD: &str = "lab-password";
}

/// Which simulated installation to serve.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ClusterFlavor {
    /// `demo-cluster` with `pve1`..`pve3` (see the crate documentation).
    #[default]
    Primary,
    /// A standalone node `lab1` (no corosync cluster: `/cluster/status`
    /// has only the node's own entry, no HA) with guests 300-303 and its own
    /// credentials ([`tokens::LAB_TOKEN_ID`], [`tokens::LAB_TICKET_PASSWORD`]).
    /// The primary's tokens and tickets get 401 here, and vice versa.
    /// Ignores [`Scenario::Large`].
    Secondary,
}

/// Which cluster the simulator starts with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scenario {
    /// Three nodes (`pve1`, `pve2` online, `pve3` offline) and a dozen guests
    /// covering the interesting states (tabulated in the crate documentation).
    #[default]
    Standard,
    /// The standard cluster plus generated guests (vmids from 1000 upward,
    /// spread over the three nodes) until there are `guests` guests in total.
    /// Meant for bounded-output tests; `/cluster/resources` stays fast.
    Large {
        /// Total number of guests; values below the standard seed's 13 give
        /// the standard cluster, values above 1,000,000 are capped.
        guests: usize,
    },
}

/// Which wire shapes the simulator answers in.
///
/// The default follows the official API schema, as the simulator always
/// has. [`Shapes::Real`] adds what responses captured from real clusters
/// showed and the schema does not, each tied to the release that sends it:
///
/// | shape | release | where |
/// |---|---|---|
/// | the guest agent's own error, passed through as HTTP 200 `{"result":{"error":{"class","desc"}}}` | all (qemu-server's `Agent.pm` does not check it) | `agent/network-get-interfaces` of VM 111 |
/// | `type: "network"` entries (`network`, `network-type`, `zone-type`, `protocol`) instead of `type: "sdn"` | PVE 9 | `/cluster/resources`; `?type=sdn` then lists only legacy entries, here none |
/// | the HA fencing row (`armed-state`, `resource_mode`) and `failback`/`auto-rebalance` on service rows | PVE 9.2 | `/cluster/ha/status/current` |
/// | JSON booleans instead of Perl 0/1 | PVE 9 (`quorate`, `failback`, `auto-rebalance`) | `/cluster/ha/status/current` |
/// | string `vmid` and `template: ""` | before pve-container 5.0.10 (PVE 8.2) | `/nodes/{node}/lxc` |
/// | the raw `lxc` key as a list of `[key, value]` pairs | all | config of CT 107 |
/// | `pbs-vm`/`pbs-ct` backups with `backup/<type>/<vmid>/<time>` volids and `verification` | all | storage `pbs-main` |
/// | release `9.2.3` in `/version` and `pveversion` | PVE 9.2 | |
///
/// `boot-info` in node status (PVE 8+) is served in both modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shapes {
    /// The official schema's shapes: Perl 0/1 booleans, `sdn` resources,
    /// no fencing row.
    #[default]
    Schema,
    /// The standard cluster plus the shapes real clusters send (tabulated
    /// above): guest 111 and storage `pbs-main` are added, everything else
    /// keeps its standard values.
    Real,
}

/// How to start a [`Simulator`].
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Seeded cluster to serve.
    pub scenario: Scenario,
    /// Path of PVE's `apidata.json`. When set, every `/api2/json` request
    /// that passes authentication is validated against it (path, method,
    /// parameters): rejected requests are answered like PVE would
    /// and recorded in [`Simulator::schema_violations`]. The file is read at
    /// start-up only (it is AGPL and never compiled into this crate).
    pub schema_path: Option<PathBuf>,
    /// PVE >= 8.3 style error bodies `{"data":null,"message":"...\n"}`
    /// (`true`, the default) or the older `{"data":null}` (`false`).
    pub message_in_body: bool,
    /// How long a ticket from `POST /access/ticket` (and its CSRF token)
    /// stays valid. PVE uses two hours; tests may shorten it.
    pub ticket_lifetime: Duration,
    /// Which installation to simulate (default: the primary cluster).
    pub cluster: ClusterFlavor,
    /// Which wire shapes to answer in (default: the schema's). Applies to
    /// the primary cluster only.
    pub shapes: Shapes,
    /// How long the worker tasks of write requests take (default
    /// [`DEFAULT_TASK_DURATION`]); see also [`Simulator::set_task_duration`].
    pub task_duration: Duration,
    /// Nodes that run PVE 8 instead of 9 (e.g. `["pve2"]`, a cluster in
    /// mid-upgrade). On them the guest agent endpoints check PVE 8's single
    /// `VM.Monitor` instead of `VM.GuestAgent.*`, and `agent/file-read`
    /// takes only `file` (`count`, `decode`, `offset` answer 400 `property
    /// is not defined in schema ...`, even with a PVE 9 `apidata.json`
    /// loaded) and always returns decoded content. Each node on a
    /// request's way checks with its own release's privileges. They run
    /// [`PVE8_VERSION`]: their node status says so, and so does
    /// `/version` when the node answering (`pve1`) is one of them, which
    /// then also serves `/pools` as PVE 8.4 does. A PVE 8 cluster
    /// ([`ClusterFlavor::Secondary`], or `pve_version` 8.x) runs PVE 8 on
    /// every node without this list.
    pub pve8_nodes: Vec<String>,
    /// The `pve-manager` version every node runs (e.g. `8.0.9`, `8.4.14`,
    /// `9.1.5`), replacing the cluster's own ([`ClusterFlavor::Primary`]:
    /// 9.1.5, [`ClusterFlavor::Secondary`]: [`PVE8_VERSION`]). It decides
    /// what `/version` and node status report and what the release-bound
    /// endpoints do: a major version 8 makes every node a PVE 8 node (see
    /// `pve8_nodes`), and before 8.1 pools are not nested (`GET /pools`
    /// takes no `poolid`, `PUT`/`DELETE /pools` do not exist).
    pub pve_version: Option<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scenario: Scenario::Standard,
            schema_path: None,
            message_in_body: true,
            ticket_lifetime: Duration::from_secs(2 * 3600),
            cluster: ClusterFlavor::Primary,
            shapes: Shapes::Schema,
            task_duration: DEFAULT_TASK_DURATION,
            pve8_nodes: Vec::new(),
            pve_version: None,
        }
    }
}

/// The authentication a request carried, as the simulator understood it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthSeen {
    /// No `Authorization` header and no `PVEAuthCookie`.
    None,
    /// A `PVEAPIToken=...` header. `token_id` is everything before the last
    /// `=`; `secret_ok` tells whether it named a known token with the right
    /// secret.
    Token {
        /// Token id as sent, e.g. `root@pam!mcp`.
        token_id: String,
        /// The token exists and the secret matched.
        secret_ok: bool,
    },
    /// A `PVE:<user>:...` ticket (cookie or `Authorization` header); `user`
    /// is the user named in it, whether or not the ticket was valid.
    Ticket {
        /// User id named by the ticket.
        user: String,
    },
    /// Some other credentials (e.g. `Basic`, or an unparsable ticket).
    Other,
}

/// One request the simulator saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// Request path as sent (still percent-encoded), e.g.
    /// `/api2/json/cluster/resources`.
    pub path: String,
    /// Raw query string without `?` (empty when there was none).
    pub query: String,
    /// Credentials seen.
    pub auth: AuthSeen,
    /// All request headers in arrival order; values decoded lossily as UTF-8.
    pub headers: Vec<(String, String)>,
    /// Status code of the response, 0 when none was produced (the client went
    /// away first, e.g. during an injected delay).
    pub status: u16,
    /// `true` once the whole response was handed to the connection; `false`
    /// if the client disconnected before (during latency, a fault delay, or
    /// before the body was taken).
    pub completed: bool,
    /// The request's parameters as PVE reads them: query string and
    /// (form or JSON) body decoded and merged, the query winning per key,
    /// repeated keys joined with NUL, `_dc` dropped. Empty when the request
    /// was refused before its body was read (authentication, a body on
    /// GET/DELETE, a chunked body).
    pub params: std::collections::BTreeMap<String, String>,
}

impl LoggedRequest {
    /// Whether this is a write (any method but `GET`).
    pub fn is_write(&self) -> bool {
        self.method != "GET"
    }

    /// The percent-decoded path after `/api2/json`, e.g.
    /// `/nodes/pve1/qemu/100/status/start`.
    pub fn api_path(&self) -> String {
        let decoded = util::pct_decode(&self.path);
        decoded
            .strip_prefix("/api2/json")
            .unwrap_or(&decoded)
            .to_string()
    }
}

/// An injected failure: for requests under a path, or for the connections
/// themselves.
///
/// Build one with struct update syntax; the default is a [`FaultKind::Status`]
/// fault on every path, forever, that does nothing until given a `status` or
/// a `delay`:
///
/// ```
/// use std::time::Duration;
/// use pve_sim::{Fault, FaultKind};
/// let trickle = Fault {
///     path_prefix: "/cluster/resources".into(),
///     kind: FaultKind::SlowLoris { interval: Duration::from_millis(100) },
///     times: Some(1),
///     ..Fault::default()
/// };
/// # let _ = trickle;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fault {
    /// Path after `/api2/json` that the fault applies to, matched per
    /// segment: `/nodes/pve2` matches `/nodes/pve2` and `/nodes/pve2/...` but
    /// not `/nodes/pve20`. Empty or `/` matches everything. Connection
    /// faults ([`FaultKind::is_connection_fault`]) ignore it.
    pub path_prefix: String,
    /// What the fault does (default: answer with `status`).
    pub kind: FaultKind,
    /// For [`FaultKind::Status`]: the status to answer with. 0 means "no
    /// error": only `delay` applies and the request then proceeds normally.
    /// Other kinds ignore it.
    pub status: u16,
    /// For [`FaultKind::Status`]: reason phrase and error message. For 401
    /// and 59x the body is empty, otherwise a PVE error body carries it.
    pub reason: String,
    /// How many requests it hits (handshakes, for the certificate kinds);
    /// `None` means until [`Simulator::clear_faults`].
    pub times: Option<usize>,
    /// Extra delay before the fault (or the normal answer) is produced;
    /// connection faults ignore it.
    pub delay: Option<Duration>,
}

impl Fault {
    /// A fault of this kind on every path, until cleared.
    pub fn of(kind: FaultKind) -> Fault {
        Fault {
            kind,
            ..Fault::default()
        }
    }
}

/// What a [`Fault`] does to the requests (or connections) it hits.
///
/// Request faults act on a request under the fault's path once it has been
/// authenticated; the broken answers of the body kinds carry
/// `Content-Type: application/json` and status 200 unless the normal answer
/// had another status. Connection faults act on new connections whatever
/// the path, and adding one closes the connections open at that moment, so
/// the next request meets it.
///
/// | kind | what a client sees |
/// |---|---|
/// | `Status` | `status` and `reason`, as PVE shapes an error with that status (or, with status 0, only `delay`) |
/// | `ResetMidBody` | the normal head and the first half of the body, then a TCP reset |
/// | `MalformedJson` | the normal answer with a comma before its last `}` |
/// | `TruncatedJson` | the first half of the normal body, with a `Content-Length` that matches it |
/// | `HugeBody` | 200 and a valid JSON body of `bytes` bytes, streamed (never held in memory) |
/// | `WrongContentType` | 200 `text/html`: a web login page, as a proxy in front of PVE answers |
/// | `SlowLoris` | the normal head at once, then its body one byte per `interval` |
/// | `ExpireTickets` | for requests that carry a ticket: 401 `Authentication failed!`, as PVE answers an expired ticket (token requests and logins pass, and do not count against `times`) |
/// | `ExpiredCertificate` | a TLS certificate from the cluster CA for the right names that expired a day ago |
/// | `UntrustedCertificate` | a TLS certificate for the right names from a CA nobody trusts (a machine in the middle) |
/// | `WrongNameCertificate` | a TLS certificate from the cluster CA for another host name only |
/// | `RefuseConnections` | connection refused: the simulator stops listening until its faults are cleared (`times` does not apply) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FaultKind {
    /// Answer with the fault's `status` and `reason` (see [`Fault::status`]).
    #[default]
    Status,
    /// Send the normal head and half the body, then reset the connection.
    ResetMidBody,
    /// The normal answer made invalid JSON (a comma before the last `}`).
    MalformedJson,
    /// The first half of the normal body, sent as if it were all of it.
    TruncatedJson,
    /// A valid JSON body of this many bytes (at least 16), streamed.
    HugeBody {
        /// Body size; `Content-Length` is set to it.
        bytes: u64,
    },
    /// 200 with an HTML page and `Content-Type: text/html`.
    WrongContentType,
    /// The normal answer, its body trickled one byte per `interval`.
    SlowLoris {
        /// Time between two bytes of the body.
        interval: Duration,
    },
    /// 401 for requests carrying a ticket, as if it had expired.
    ExpireTickets,
    /// Handshakes present an expired certificate (connection fault).
    ExpiredCertificate,
    /// Handshakes present a certificate from an unknown CA (connection fault).
    UntrustedCertificate,
    /// Handshakes present a certificate for another name (connection fault).
    WrongNameCertificate,
    /// Stop listening until the faults are cleared (connection fault).
    RefuseConnections,
}

impl FaultKind {
    /// Whether it acts on connections rather than on requests.
    pub fn is_connection_fault(self) -> bool {
        matches!(
            self,
            FaultKind::ExpiredCertificate
                | FaultKind::UntrustedCertificate
                | FaultKind::WrongNameCertificate
                | FaultKind::RefuseConnections
        )
    }
}

/// A running simulator. Clones share the server; it stops when the last
/// clone is dropped or when [`Simulator::shutdown`] is called.
#[derive(Clone)]
pub struct Simulator {
    handle: Arc<Handle>,
}

struct Handle {
    shared: Arc<server::Shared>,
    addr: SocketAddr,
    ca_pem: String,
    fingerprint: String,
    shutdown_tx: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
    }
}

impl Simulator {
    /// Generates the certificates, seeds the cluster, loads the schema if
    /// configured, and starts serving HTTPS on `127.0.0.1` with an
    /// OS-chosen port.
    pub async fn start(cfg: SimConfig) -> anyhow::Result<Simulator> {
        Self::start_on(cfg, 0).await
    }

    /// Like [`Simulator::start`] but on a given port (0 = any free port).
    pub async fn start_on(cfg: SimConfig, port: u16) -> anyhow::Result<Simulator> {
        let duration = cfg.task_duration;
        let started = server::start(cfg, port).await?;
        util::write(&started.shared.cluster).work.default_duration = duration;
        Ok(Simulator {
            handle: Arc::new(Handle {
                shared: started.shared,
                addr: started.addr,
                ca_pem: started.ca_pem,
                fingerprint: started.fingerprint,
                shutdown_tx: started.shutdown_tx,
                task: Mutex::new(Some(started.task)),
            }),
        })
    }

    /// `https://127.0.0.1:PORT`, without `/api2/json`.
    pub fn base_url(&self) -> String {
        format!("https://{}", self.handle.addr)
    }

    /// The TCP port the simulator listens on.
    pub fn port(&self) -> u16 {
        self.handle.addr.port()
    }

    /// PEM of the generated cluster CA (like `/etc/pve/pve-root-ca.pem`);
    /// trust it to verify the served certificate.
    pub fn ca_pem(&self) -> String {
        self.handle.ca_pem.clone()
    }

    /// SHA-256 of the served leaf certificate's DER as upper-case hex pairs
    /// joined by `:`, as `GET /nodes` shows it in `ssl_fingerprint`.
    pub fn leaf_fingerprint(&self) -> String {
        self.handle.fingerprint.clone()
    }

    /// Every request seen since start (or the last [`clear_requests`]), in
    /// arrival order. Requests the HTTP parser rejects before they can be
    /// routed (malformed request line: 400, headers over 16 KiB or 64
    /// lines: 431) are answered but not logged.
    ///
    /// [`clear_requests`]: Simulator::clear_requests
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.handle.shared.log.snapshot()
    }

    /// Successful `POST /access/ticket` calls (password logins and ticket
    /// renewals) since start; not reset by [`Simulator::clear_requests`].
    pub fn login_count(&self) -> usize {
        self.handle
            .shared
            .logins
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The write requests (every method but `GET`) in [`Simulator::requests`],
    /// in arrival order: what e2e tests assert as "exact method, path and
    /// parameters", or expect to be empty after a dry run or a refusal.
    pub fn writes(&self) -> Vec<LoggedRequest> {
        self.requests()
            .into_iter()
            .filter(LoggedRequest::is_write)
            .collect()
    }

    /// A guest's current state (running tasks moved on to now first), or
    /// `None` when no guest has this vmid.
    pub fn guest(&self, vmid: u32) -> Option<GuestState> {
        let c = self.cluster_now();
        c.guests.get(&vmid).map(view::guest_state)
    }

    /// Every guest's vmid, ascending.
    pub fn guest_ids(&self) -> Vec<u32> {
        self.cluster_now().guests.keys().copied().collect()
    }

    /// A task by UPID (a seeded one or one a write started), as it is now.
    pub fn task(&self, upid: &str) -> Option<TaskState> {
        let c = self.cluster_now();
        c.tasks
            .iter()
            .find(|t| t.upid == upid)
            .map(view::task_state)
    }

    /// UPIDs of the tasks the write endpoints started that are still
    /// running.
    pub fn running_tasks(&self) -> Vec<String> {
        let c = self.cluster_now();
        c.work.workers.iter().map(|w| w.upid.clone()).collect()
    }

    /// How long every task takes from now on (those already running keep
    /// theirs). Zero ends tasks at the next look.
    pub fn set_task_duration(&self, d: Duration) {
        util::write(&self.handle.shared.cluster)
            .work
            .default_duration = d;
    }

    /// How long tasks of one type (`qmstart`, `vzdump`, `qmclone`, ...)
    /// take from now on, overriding [`Simulator::set_task_duration`].
    pub fn set_task_duration_for(&self, task_type: &str, d: Duration) {
        util::write(&self.handle.shared.cluster)
            .work
            .durations
            .insert(task_type.to_string(), d);
    }

    /// Sets (or with `None` clears) a guest's config lock, as a backup or
    /// an interrupted task would leave it. Returns `false` when no guest
    /// has this vmid.
    pub fn set_guest_lock(&self, vmid: u32, lock: Option<&str>) -> bool {
        let mut c = util::write(&self.handle.shared.cluster);
        let Some(g) = c.guests.get_mut(&vmid) else {
            return false;
        };
        g.lock = lock.map(str::to_string);
        c.generation += 1;
        true
    }

    /// Migrates the HA groups to rules, as PVE 9's HA manager does once
    /// every node runs PVE 9 and is online (on the standard cluster `pve3`
    /// never is): each group a resource uses becomes the node-affinity rule
    /// `ha-group-<group>` (`strict` from `restricted`, the group's comment
    /// or `Generated from HA group '<group>'.`), the resources lose `group`
    /// (a `nofailback` group's get `failback 0`), and every group goes.
    /// From then on rules can be written and the group endpoints refuse.
    /// Returns `false` (and changes nothing) on PVE 8 or without groups.
    pub fn migrate_ha_groups(&self) -> bool {
        let mut c = util::write(&self.handle.shared.cluster);
        work::advance(&mut c);
        ha::migrate_groups(&mut c)
    }

    fn cluster_now(&self) -> std::sync::RwLockReadGuard<'_, state::Cluster> {
        work::advance_shared(&self.handle.shared.cluster);
        util::read(&self.handle.shared.cluster)
    }

    /// Forgets the logged requests.
    pub fn clear_requests(&self) {
        self.handle.shared.log.clear();
    }

    /// Requests the real API would have rejected according to
    /// `apidata.json`, one line each. Always empty when no schema is loaded.
    pub fn schema_violations(&self) -> Vec<String> {
        util::lock(&self.handle.shared.violations).clone()
    }

    /// Delay added before every response (zero disables it).
    pub fn set_latency(&self, d: Duration) {
        *util::lock(&self.handle.shared.latency) = d;
    }

    /// Adds a fault; the first matching fault with hits left wins. A
    /// connection fault ([`FaultKind::is_connection_fault`]) also closes
    /// the connections open now, so the next request meets it.
    pub fn add_fault(&self, f: Fault) {
        faults::add(&self.handle.shared, f);
    }

    /// Removes all faults, and listens again after
    /// [`FaultKind::RefuseConnections`] (on the same port).
    pub fn clear_faults(&self) {
        faults::clear(&self.handle.shared);
    }

    /// Stops accepting connections, closes open ones and waits for the
    /// server task to end. Other clones of this handle stop working too.
    pub async fn shutdown(self) {
        let _ = self.handle.shutdown_tx.send(true);
        let task = util::lock(&self.handle.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("addr", &self.handle.addr)
            .field("fingerprint", &self.handle.fingerprint)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
