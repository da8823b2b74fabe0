//! DMN over REST against a real `rill standalone`: deploying a DMN beside a BPMN lists
//! the decisions in Camunda 8.8's deploy answer, `POST /v2/decision-definitions/evaluation`
//! evaluates by id and by key (failures answer with the failed decision), and a
//! business rule task sets its result variable.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Standalone, examples};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn entries<'a>(deployment: &'a Value, kind: &str) -> Vec<&'a Value> {
    deployment["deployments"]
        .as_array()
        .expect("deployments")
        .iter()
        .filter_map(|entry| entry.get(kind))
        .collect()
}

#[test]
fn decisions_deploy_evaluate_and_run_in_a_business_rule_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut rill = Standalone::start(&dir.path().join("data"), &["cluster.partitions-count=2"]);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());

        let (s, deployment) = api
            .deploy(&[&examples().join("dinner.bpmn"), &examples().join("dish.dmn")])
            .await
            .unwrap();
        assert_eq!(s, 200, "{deployment}");
        assert_eq!(entries(&deployment, "processDefinition").len(), 1);
        let decisions = entries(&deployment, "decisionDefinition");
        let ids: Vec<&str> = decisions
            .iter()
            .map(|d| d["decisionDefinitionId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["season", "dish", "menu"]);
        let season = decisions[0];
        assert_eq!(season["version"], 1);
        assert_eq!(season["name"], "Season");
        assert_eq!(season["tenantId"], "<default>");
        assert_eq!(season["decisionRequirementsId"], "DishDecisions");
        let drgs = entries(&deployment, "decisionRequirements");
        assert_eq!(drgs.len(), 1);
        assert_eq!(drgs[0]["decisionRequirementsName"], "Dish decisions");
        assert_eq!(drgs[0]["resourceName"], "dish.dmn");
        assert_eq!(drgs[0]["version"], 1);
        assert_eq!(
            drgs[0]["decisionRequirementsKey"],
            season["decisionRequirementsKey"]
        );
        let season_key = season["decisionDefinitionKey"].as_str().unwrap().to_owned();

        // By id: every decision of the graph evaluated, required ones first.
        let (s, evaluated) = api
            .post(
                "/v2/decision-definitions/evaluation",
                json!({"decisionDefinitionId": "menu", "variables": {"month": 1, "guestCount": 12}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{evaluated}");
        assert_eq!(evaluated["output"], "\"Winter menu: Stew\"");
        assert_eq!(evaluated["decisionDefinitionId"], "menu");
        assert_eq!(evaluated["failureMessage"], "");
        let evaluation_key = evaluated["decisionEvaluationKey"].as_str().unwrap();
        let inner = evaluated["evaluatedDecisions"].as_array().unwrap();
        assert_eq!(inner.len(), 3);
        assert_eq!(inner[0]["decisionDefinitionId"], "season");
        assert_eq!(inner[0]["decisionDefinitionKey"], season_key.as_str());
        assert_eq!(inner[0]["decisionDefinitionType"], "DECISION_TABLE");
        let instance_key = inner[0]["decisionEvaluationInstanceKey"].as_str().unwrap();
        assert!(
            instance_key.parse::<u64>().is_ok() && instance_key != evaluation_key,
            "a key of its own: {instance_key}"
        );
        assert_eq!(inner[0]["evaluatedInputs"][0]["inputValue"], "1");
        assert_eq!(inner[0]["matchedRules"][0]["ruleId"], "Season_Rule_4");
        assert_eq!(inner[2]["decisionDefinitionType"], "LITERAL_EXPRESSION");

        // By key, on whichever partition: the decision reached both.
        for _ in 0..2 {
            let (s, by_key) = api
                .post(
                    "/v2/decision-definitions/evaluation",
                    json!({"decisionDefinitionKey": season_key, "variables": {"month": 7}}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{by_key}");
            assert_eq!(by_key["output"], "\"Summer\"");
        }

        // A failed evaluation answers with the failed decision and why.
        let (s, failed) = api
            .post(
                "/v2/decision-definitions/evaluation",
                json!({"decisionDefinitionId": "season", "variables": {"month": "May"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{failed}");
        assert_eq!(failed["failedDecisionDefinitionId"], "season");
        assert!(
            failed["failureMessage"].as_str().unwrap().contains("Season_Rule_1"),
            "{failed}"
        );

        let (s, missing) = api
            .post(
                "/v2/decision-definitions/evaluation",
                json!({"decisionDefinitionId": "nope"}),
            )
            .await
            .unwrap();
        assert_eq!(s, 404, "{missing}");
        let (s, both) = api
            .post(
                "/v2/decision-definitions/evaluation",
                json!({"decisionDefinitionId": "menu", "decisionDefinitionKey": season_key}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{both}");

        // A broken table is refused with the decision, the rule and the column.
        let broken = std::fs::read_to_string(examples().join("dish.dmn"))
            .unwrap()
            .replace("<text>[6..8]</text>", "<text>[6..</text>");
        let broken_path = dir.path().join("broken.dmn");
        std::fs::write(&broken_path, broken).unwrap();
        let (s, refused) = api.deploy(&[&broken_path]).await.unwrap();
        assert_eq!(s, 400, "{refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(
            detail.contains("element 'season'") && detail.contains("rule 'Season_Rule_2'"),
            "{detail}"
        );

        // Searches and reads, from the history store.
        let deadline = Instant::now() + Duration::from_secs(30);
        let found = loop {
            let (s, b) = api
                .post(
                    "/v2/decision-definitions/search",
                    json!({"filter": {"decisionRequirementsId": "DishDecisions"},
                           "sort": [{"field": "decisionDefinitionId", "order": "ASC"}]}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if b["items"].as_array().is_some_and(|items| items.len() == 3) {
                break b;
            }
            assert!(Instant::now() < deadline, "decisions not in the history: {b}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let sorted: Vec<&str> = found["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["decisionDefinitionId"].as_str().unwrap())
            .collect();
        assert_eq!(sorted, ["dish", "menu", "season"]);
        assert_eq!(found["page"]["totalItems"], 3);
        let (s, got) = api
            .get(&format!("/v2/decision-definitions/{season_key}"))
            .await
            .unwrap();
        assert_eq!(s, 200, "{got}");
        assert_eq!(got["decisionDefinitionId"], "season");
        assert_eq!(got["decisionRequirementsKey"], drgs[0]["decisionRequirementsKey"]);
        let http = reqwest::Client::new();
        let xml = http
            .get(format!("{}/v2/decision-definitions/{season_key}/xml", rill.rest()))
            .send()
            .await
            .unwrap();
        assert_eq!(xml.status().as_u16(), 200);
        assert!(xml.text().await.unwrap().contains("<decision id=\"season\""));
        let drg_key = drgs[0]["decisionRequirementsKey"].as_str().unwrap();
        let (s, drg) = api
            .post(
                "/v2/decision-requirements/search",
                json!({"filter": {"decisionRequirementsId": "DishDecisions"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{drg}");
        assert_eq!(drg["items"][0]["decisionRequirementsKey"], drg_key);
        assert_eq!(drg["items"][0]["resourceName"], "dish.dmn");
        let (s, drg) = api
            .get(&format!("/v2/decision-requirements/{drg_key}"))
            .await
            .unwrap();
        assert_eq!(s, 200, "{drg}");
        assert_eq!(drg["decisionRequirementsName"], "Dish decisions");
        let xml = http
            .get(format!("{}/v2/decision-requirements/{drg_key}/xml", rill.rest()))
            .send()
            .await
            .unwrap();
        assert_eq!(xml.status().as_u16(), 200);
        assert!(xml.text().await.unwrap().contains("DishDecisions"));
        let (s, _) = api
            .get(&format!("/v2/decision-definitions/{drg_key}"))
            .await
            .unwrap();
        assert_eq!(s, 404);
        let (s, bad) = api
            .post(
                "/v2/decision-definitions/search",
                json!({"filter": {"colour": "red"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 400, "{bad}");

        // The business rule task: its result variable reaches the next job.
        let instance = api
            .create("dinner", json!({"month": 10, "guestCount": 4}))
            .await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let job = loop {
            let (s, b) = api
                .post(
                    "/v2/jobs/activation",
                    json!({"type": "cook", "maxJobsToActivate": 1, "timeout": 60000, "requestTimeout": 1000}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if let Some(job) = b["jobs"].as_array().and_then(|jobs| jobs.first()) {
                break job.clone();
            }
            assert!(Instant::now() < deadline, "no cook job");
        };
        assert_eq!(job["processInstanceKey"], instance.as_str());
        assert_eq!(job["variables"]["dish"], "Spareribs");

        // Decision instances: each decision evaluated, over every partition.
        let deadline = Instant::now() + Duration::from_secs(30);
        let of_instance = loop {
            let (s, b) = api
                .post(
                    "/v2/decision-instances/search",
                    json!({"filter": {"processInstanceKey": instance},
                           "sort": [{"field": "decisionEvaluationInstanceKey"}]}),
                )
                .await
                .unwrap();
            assert_eq!(s, 200, "{b}");
            if b["items"].as_array().is_some_and(|items| items.len() == 2) {
                break b;
            }
            assert!(Instant::now() < deadline, "no decision instances: {b}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let items = of_instance["items"].as_array().unwrap();
        assert_eq!(items[0]["decisionDefinitionId"], "season");
        assert_eq!(items[1]["decisionDefinitionId"], "dish");
        assert_eq!(items[1]["state"], "EVALUATED");
        assert_eq!(items[1]["result"], "\"Spareribs\"");
        assert_eq!(items[1]["processInstanceKey"], instance.as_str());
        assert_eq!(items[1]["decisionEvaluationKey"], items[0]["decisionEvaluationKey"]);
        let dish_key = items[1]["decisionEvaluationInstanceKey"].as_str().unwrap();
        let (s, detail) = api
            .get(&format!("/v2/decision-instances/{dish_key}"))
            .await
            .unwrap();
        assert_eq!(s, 200, "{detail}");
        assert_eq!(detail["evaluatedInputs"][1]["inputName"], "How many guests");
        assert_eq!(detail["evaluatedInputs"][1]["inputValue"], "4");
        assert_eq!(detail["matchedRules"][0]["ruleId"], "Dish_Rule_1");
        assert_eq!(
            detail["matchedRules"][0]["evaluatedOutputs"][0]["outputValue"],
            "\"Spareribs\""
        );
        let (s, failed) = api
            .post(
                "/v2/decision-instances/search",
                json!({"filter": {"state": "FAILED"}}),
            )
            .await
            .unwrap();
        assert_eq!(s, 200, "{failed}");
        assert_eq!(failed["items"].as_array().unwrap().len(), 1, "{failed}");
        assert_eq!(failed["items"][0]["decisionDefinitionId"], "season");
        assert!(
            failed["items"][0]["evaluationFailure"]
                .as_str()
                .unwrap()
                .contains("Season_Rule_1")
        );
        assert!(failed["items"][0].get("processInstanceKey").is_none());
        assert!(rill.terminate(Duration::from_secs(20)));
    });
}
