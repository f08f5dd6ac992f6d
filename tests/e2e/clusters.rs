//! Several clusters from one server: each call goes to the cluster it
//! names, with that cluster's credentials only.

use pve_sim::AuthSeen;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn each_cluster_gets_only_its_own_credentials() {
    within(async {
        let main = simulator().await;
        let lab = lab_simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let opts = Opts {
            env_cluster: false,
            tls: Tls::Nothing,
            ..Opts::default()
        }
        .arg("--config")
        .arg(&two_clusters(&main, &lab, &dir));
        let server = Server::start(&main, opts).await;

        // With two clusters there is one to choose: every tool offers
        // `cluster` (with one it is accepted but not listed).
        for tool in server.client.list_all_tools().await.expect("tools/list") {
            let input = tool.input_schema.as_ref();
            assert_eq!(
                input["properties"]["cluster"]["type"], "string",
                "{}",
                tool.name
            );
        }
        let clusters = server.ok("pve_list_clusters", json!({})).await;
        let names: Vec<_> = clusters["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].clone())
            .collect();
        assert_eq!(names, [json!("main"), json!("lab")]);
        assert_eq!(clusters["default"], "main");
        assert!(
            !clusters.to_string().contains(ADMIN_TOKEN_SECRET)
                && !clusters.to_string().contains(LAB_TOKEN_SECRET)
        );

        let default = server.ok("pve_list_vms", json!({})).await;
        assert_eq!(default["total"], 13);
        assert_eq!(default["cluster"], "main");
        let on_lab = server.ok("pve_list_vms", json!({"cluster": "lab"})).await;
        assert_eq!(vmids(&on_lab), [300, 301, 302, 303]);
        assert_eq!(on_lab["cluster"], "lab");
        let status = server
            .ok("pve_get_vm_status", json!({"cluster": "lab", "vmid": 302}))
            .await;
        assert_eq!(status["node"], "lab1");
        // A vmid that exists only on the other cluster is not found here.
        let missing = server.err("pve_get_vm_status", json!({"vmid": 302})).await;
        assert!(missing.contains("302"), "{missing}");

        let unknown = server.err("pve_list_vms", json!({"cluster": "prod"})).await;
        assert!(
            unknown.contains("cluster") && unknown.contains("main") && unknown.contains("lab"),
            "{unknown}"
        );

        for (sim, id) in [(&main, ADMIN_TOKEN_ID), (&lab, LAB_TOKEN_ID)] {
            let requests = sim.requests();
            assert!(!requests.is_empty());
            for r in requests {
                assert_eq!(
                    r.auth,
                    AuthSeen::Token {
                        token_id: id.into(),
                        secret_ok: true
                    },
                    "{r:?}"
                );
            }
            assert_no_schema_violations(sim);
        }
    })
    .await;
}
