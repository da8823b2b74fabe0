#!/usr/bin/env python3
"""Writes rill-history.ndjson: Kibana saved objects for Rill's (Zeebe-format) record
indices. Run it after changing this file: `python3 exporter/kibana/generate.py`.

Objects: data views (all records, process instances, incidents, jobs, variables), a saved
search for one process instance's history, four visualizations and a dashboard. Nested
JSON (searchSourceJSON, visState, panelsJSON) is stored as strings, as Kibana exports it.
"""
import json
import os

PREFIX = "zeebe-record"
CORE = "8.8.0"


def data_view(id_, title, name):
    return {
        "id": id_, "type": "index-pattern", "coreMigrationVersion": CORE,
        "typeMigrationVersion": "8.0.0", "managed": False, "references": [],
        "attributes": {
            "title": title, "name": name, "timeFieldName": "timestamp", "allowNoIndex": True,
            "fieldAttrs": "{}", "fieldFormatMap": "{}", "fields": "[]", "runtimeFieldMap": "{}",
            "sourceFilters": "[]", "typeMeta": "{}",
        },
    }


def search_source(query, with_index=True):
    source = {"query": {"query": query, "language": "kuery"}, "filter": []}
    if with_index:
        source["indexRefName"] = "kibanaSavedObjectMeta.searchSourceJSON.index"
    return json.dumps(source)


def visualization(id_, title, description, view, query, vis_type, aggs, params):
    vis_state = {"title": title, "type": vis_type, "aggs": aggs, "params": params}
    return {
        "id": id_, "type": "visualization", "coreMigrationVersion": CORE, "managed": False,
        "references": [{"id": view, "name": "kibanaSavedObjectMeta.searchSourceJSON.index",
                        "type": "index-pattern"}],
        "attributes": {
            "title": title, "description": description, "uiStateJSON": "{}", "version": 1,
            "visState": json.dumps(vis_state),
            "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(query)},
        },
    }


def count():
    return {"id": "1", "enabled": True, "type": "count", "params": {}, "schema": "metric"}


def over_time():
    return {"id": "2", "enabled": True, "type": "date_histogram", "schema": "segment",
            "params": {"field": "timestamp", "interval": "auto", "min_doc_count": 1,
                       "extended_bounds": {}}}


def split_by(field, schema="group", size=10):
    return {"id": "3", "enabled": True, "type": "terms", "schema": schema,
            "params": {"field": field, "size": size, "order": "desc", "orderBy": "1",
                       "otherBucket": False, "missingBucket": False}}


LINE = {"type": "line", "addLegend": True, "legendPosition": "right", "addTooltip": True,
        "addTimeMarker": False}

objects = [
    data_view("rill-records", f"{PREFIX}*", "Rill records (all value types)"),
    data_view("rill-process-instance", f"{PREFIX}-process-instance", "Rill process instances"),
    data_view("rill-incident", f"{PREFIX}-incident", "Rill incidents"),
    data_view("rill-job", f"{PREFIX}-job", "Rill jobs"),
    data_view("rill-variable", f"{PREFIX}-variable", "Rill variables"),
    data_view("rill-decision-evaluation", f"{PREFIX}-decision-evaluation",
              "Rill decision evaluations"),
    {
        "id": "rill-instance-history", "type": "search", "coreMigrationVersion": CORE,
        "managed": False,
        "references": [{"id": "rill-records", "name": "kibanaSavedObjectMeta.searchSourceJSON.index",
                        "type": "index-pattern"}],
        "attributes": {
            "title": "Process instance history",
            "description": "Every exported record of one process instance, in log order. "
                           "Replace the key in the query with the instance's key.",
            "columns": ["valueType", "intent", "value.elementId", "value.bpmnElementType",
                        "key", "value.errorType", "value.name", "value.value"],
            "sort": [["position", "asc"]],
            "grid": {}, "hideChart": True, "isTextBasedQuery": False, "timeRestore": False,
            "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(
                "value.processInstanceKey : 2251799813685251")},
        },
    },
    visualization(
        "rill-vis-instances", "Process instances started and completed",
        "ELEMENT_ACTIVATED and ELEMENT_COMPLETED events of PROCESS elements over time.",
        "rill-process-instance",
        'value.bpmnElementType : "PROCESS" and intent : ("ELEMENT_ACTIVATED" or "ELEMENT_COMPLETED" or "ELEMENT_TERMINATED")',
        "line", [count(), over_time(), split_by("intent")], LINE),
    visualization(
        "rill-vis-incidents", "Incidents by error type",
        "Incidents created, by error type.", "rill-incident", 'intent : "CREATED"',
        "pie", [count(), split_by("value.errorType", schema="segment")],
        {"type": "pie", "addTooltip": True, "addLegend": True, "legendPosition": "right",
         "isDonut": True, "labels": {"show": True, "values": True, "last_level": True,
                                     "truncate": 100}}),
    visualization(
        "rill-vis-jobs", "Job throughput",
        "Jobs created, completed, failed and timed out over time.", "rill-job",
        'intent : ("CREATED" or "COMPLETED" or "FAILED" or "TIMED_OUT")',
        "line", [count(), over_time(), split_by("intent")], LINE),
    visualization(
        "rill-vis-decisions", "Decision evaluations",
        "Decisions evaluated (by business rule tasks and the evaluate API) over time, "
        "by decision id; FAILED evaluations are the ones that raised incidents or answered "
        "with a failure.",
        "rill-decision-evaluation", 'intent : ("EVALUATED" or "FAILED")',
        "line", [count(), over_time(), split_by("value.decisionId")], LINE),
    {
        "id": "rill-vis-exporter-lag", "type": "visualization", "coreMigrationVersion": CORE,
        "managed": False, "references": [],
        "attributes": {
            "title": "Exporter lag", "description": "", "uiStateJSON": "{}", "version": 1,
            "kibanaSavedObjectMeta": {"searchSourceJSON": json.dumps(
                {"query": {"query": "", "language": "kuery"}, "filter": []})},
            "visState": json.dumps({
                "title": "Exporter lag", "type": "markdown", "aggs": [],
                "params": {"fontSize": 12, "openLinksInNewTab": False, "markdown": (
                    "**Exporter lag is not a document field.** A record only reaches "
                    "Elasticsearch once it is exported, so the indices cannot show what "
                    "is still waiting. The broker reports it on `/metrics` (port 9600) as "
                    "`rill_exporter_lag_records{exporter,partition}` (last position handed "
                    "to the exporter minus the exported position), next to "
                    "`rill_exporter_last_exported_position`. Chart it in Grafana or with "
                    "Metricbeat's Prometheus module. See docs/history-in-kibana.md.")},
            }),
        },
    },
]

panels = []
references = []
layout = [("rill-vis-instances", 0, 0, 24, 15), ("rill-vis-incidents", 24, 0, 24, 15),
          ("rill-vis-jobs", 0, 15, 24, 15), ("rill-vis-exporter-lag", 24, 15, 24, 15),
          ("rill-vis-decisions", 0, 30, 24, 15)]
for index, (vis, x, y, w, h) in enumerate(layout, start=1):
    panels.append({"version": CORE, "type": "visualization", "panelIndex": str(index),
                   "gridData": {"x": x, "y": y, "w": w, "h": h, "i": str(index)},
                   "embeddableConfig": {}, "panelRefName": f"panel_{index}"})
    references.append({"id": vis, "name": f"{index}:panel_{index}", "type": "visualization"})
objects.append({
    "id": "rill-dashboard", "type": "dashboard", "coreMigrationVersion": CORE, "managed": False,
    "references": references,
    "attributes": {
        "title": "Rill process history",
        "description": "Process instances, incidents, jobs and decision evaluations from "
                       "Rill's record indices.",
        "panelsJSON": json.dumps(panels),
        "optionsJSON": json.dumps({"useMargins": True, "syncColors": False,
                                   "hidePanelTitles": False}),
        "timeRestore": False, "version": 1,
        "kibanaSavedObjectMeta": {"searchSourceJSON": search_source("", with_index=False)},
    },
})

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rill-history.ndjson")
with open(out, "w") as f:
    for obj in objects:
        f.write(json.dumps(obj, separators=(",", ":")) + "\n")
print(f"wrote {len(objects)} objects to {out}")
