#!/usr/bin/env python3
"""Writes rill-dashboard.json, the Grafana dashboard for Rill's Prometheus metrics.

Edit this file, run it (python3 deploy/grafana/generate.py), and commit both; the chart
tests check that the JSON is what this script writes and that every metric it queries is
one Rill exports (names in */src/metrics.rs).

Commands are applied on every replica, so per-partition throughput and flow control are
read from the leader only: `and on (namespace, pod, partition) (rill_raft_role == 3)`.
"""

import json
import pathlib

# Every query is narrowed to the chosen namespace and release (the job label is the
# Service a ServiceMonitor scraped: <release>-broker or <release>-gateway).
SEL = 'namespace=~"$namespace", job=~"$job"'
PART = SEL + ', partition=~"$partition"'
LEADER = f"and on (namespace, pod, partition) (rill_raft_role{{{PART}}} == 3)"


class Layout:
    """Places panels left to right on Grafana's 24-column grid, rows top to bottom."""

    def __init__(self):
        self.y = 0
        self.x = 0
        self.row_height = 0
        self.next_id = 1
        self.panels = []

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "title": title, "collapsed": False,
                            "id": self._id(), "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def add(self, panel, w, h):
        if self.x + w > 24:
            self._newline()
        panel["id"] = self._id()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += w
        self.row_height = max(self.row_height, h)

    def _newline(self):
        self.y += self.row_height
        self.x = 0
        self.row_height = 0

    def _id(self):
        self.next_id += 1
        return self.next_id - 1


def target(expr, legend, ref):
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"},
            "expr": expr, "legendFormat": legend, "refId": ref, "range": True}


def timeseries(title, description, queries, unit="short", stack=False):
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "targets": [target(e, l, chr(ord("A") + i)) for i, (e, l) in enumerate(queries)],
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "custom": {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                           "showPoints": "never",
                           "stacking": {"mode": "normal" if stack else "none", "group": "A"}},
            },
            "overrides": [],
        },
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
    }


def stat(title, description, expr, unit="short", thresholds=None):
    steps = thresholds or [{"color": "green", "value": None}]
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "targets": [target(expr, "", "A") | {"instant": True, "range": False}],
        "fieldConfig": {"defaults": {"unit": unit,
                                     "thresholds": {"mode": "absolute", "steps": steps}},
                        "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "background", "graphMode": "none", "textMode": "value"},
    }


def quantiles(metric, selector, by, what):
    return [
        (f"histogram_quantile({q}, sum by (le{by}) (rate({metric}_bucket{{{selector}}}[$__rate_interval])))",
         f"p{int(q * 100)}{what}")
        for q in (0.5, 0.99)
    ]


def variable(name, label, query, multi=True):
    return {
        "name": name, "label": label, "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": f"{name}-query"},
        "definition": query, "refresh": 2, "sort": 3,
        "multi": multi, "includeAll": True, "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
    }


def dashboard():
    g = Layout()
    red_above = lambda v: [{"color": "green", "value": None}, {"color": "red", "value": v}]

    g.row("Overview")
    g.add(stat("Partitions without a leader",
               "Partitions no replica leads: they accept no commands.",
               f"count(max by (partition) (rill_raft_role{{{SEL}}} == bool 3) == 0) or vector(0)",
               thresholds=red_above(1)), 6, 4)
    g.add(stat("Brokers up", "Broker and gateway targets Prometheus scrapes successfully.",
               f"sum(up{{{SEL}}})"), 6, 4)
    g.add(stat("Commands / s", "Commands applied by partition leaders.",
               f"sum(rate(rill_stream_processor_commands_processed_total{{{PART}}}[$__rate_interval]) {LEADER})",
               unit="ops"), 6, 4)
    g.add(stat("Rejected by flow control",
               "Share of requests rejected with RESOURCE_EXHAUSTED.",
               f"sum(rate(rill_dropped_request_count_total{{{PART}}}[$__rate_interval])) / "
               f"clamp_min(sum(rate(rill_received_request_count_total{{{PART}}}[$__rate_interval])), 1e-9)",
               unit="percentunit", thresholds=red_above(0.05)), 6, 4)

    g.row("Throughput")
    g.add(timeseries("Commands processed per partition",
                     "Commands applied by each partition's leader.",
                     [(f"sum by (partition) (rate(rill_stream_processor_commands_processed_total{{{PART}}}[$__rate_interval]) {LEADER})",
                       "partition {{partition}}")], unit="ops", stack=True), 12, 8)
    g.add(timeseries("Records written per partition",
                     "Records (commands, events, rejections) written by each leader.",
                     [(f"sum by (partition) (rate(rill_stream_processor_records_total{{{PART}}}[$__rate_interval]) {LEADER})",
                       "partition {{partition}}")], unit="ops", stack=True), 12, 8)
    g.add(timeseries("REST requests by status",
                     "Requests answered by the gateways.",
                     [(f"sum by (status) (rate(rill_gateway_rest_requests_total{{{SEL}}}[$__rate_interval]))",
                       "{{status}}")], unit="reqps", stack=True), 12, 8)
    g.add(timeseries("Jobs activated and waiting polls",
                     "Jobs handed to workers, job activations waiting for jobs, and activation commands by whether they found jobs.",
                     [(f"sum(rate(rill_gateway_jobs_activated_total{{{SEL}}}[$__rate_interval]))", "jobs activated / s"),
                      (f"sum(rill_gateway_long_polling_waiting{{{SEL}}})", "waiting long polls"),
                      (f"sum by (outcome) (rate(rill_gateway_job_activation_commands_total{{{SEL}}}[$__rate_interval]))",
                       "activation commands / s ({{outcome}})")]), 12, 8)

    g.row("Latency")
    g.add(timeseries("Commit latency",
                     "From proposing an entry on the leader until it is applied (replication and fsync).",
                     quantiles("rill_raft_commit_latency_seconds", PART, "", ""), unit="s"), 8, 8)
    g.add(timeseries("Batch processing latency",
                     "Time to apply one batch of committed entries, per replica.",
                     quantiles("rill_stream_processor_batch_processing_duration_seconds", PART, "", ""), unit="s"), 8, 8)
    g.add(timeseries("REST latency (p99) by endpoint",
                     "Includes long polls and awaited results, slow by design.",
                     [(f"histogram_quantile(0.99, sum by (le, endpoint) (rate(rill_gateway_rest_request_latency_seconds_bucket{{{SEL}}}[$__rate_interval])))",
                       "{{endpoint}}")], unit="s"), 8, 8)

    g.row("Flow control")
    g.add(timeseries("Request limit per partition",
                     "The leader's current in-flight limit (AIMD, Vegas, Gradient… or fixed).",
                     [(f"max by (partition) (rill_backpressure_requests_limit{{{PART}}} {LEADER})", "limit p{{partition}}"),
                      (f"max by (partition) (rill_backpressure_inflight_requests_count{{{PART}}} {LEADER})", "in flight p{{partition}}")]),
          12, 8)
    g.add(timeseries("Requests received and rejected",
                     "Rejected requests were answered with RESOURCE_EXHAUSTED (HTTP 503).",
                     [(f"sum by (partition) (rate(rill_received_request_count_total{{{PART}}}[$__rate_interval]))", "received p{{partition}}"),
                      (f"sum by (partition) (rate(rill_dropped_request_count_total{{{PART}}}[$__rate_interval]))", "rejected p{{partition}}")],
                     unit="reqps"), 12, 8)

    g.row("Raft")
    g.add(timeseries("Leaders per broker",
                     "Partitions each broker leads; an even spread balances the load.",
                     [(f"count by (pod) (rill_raft_role{{{PART}}} == 3)", "{{pod}}")], stack=True), 8, 8)
    g.add(timeseries("Role per replica",
                     "1 follower, 2 candidate, 3 leader. Candidates that stay are elections that do not finish.",
                     [(f"rill_raft_role{{{PART}}}", "{{pod}} p{{partition}}")]), 8, 8)
    g.add(timeseries("Leader changes",
                     "New leaders per partition as its replicas saw them (each replica counts once), and the time each went without one.",
                     [(f"max by (partition) (increase(rill_raft_leader_changes_total{{{PART}}}[$__rate_interval]))", "changes p{{partition}}"),
                      (f"max by (partition) (rill_raft_leaderless_seconds{{{PART}}})", "without leader now (s) p{{partition}}")]), 8, 8)
    g.add(timeseries("Replica apply gap",
                     "Entries the slowest replica of a partition trails the fastest one by.",
                     [(f"max by (partition) (rill_raft_applied_index{{{PART}}}) - min by (partition) (rill_raft_applied_index{{{PART}}})",
                       "partition {{partition}}")]), 8, 8)
    g.add(timeseries("Processing errors",
                     "Commands whose processing failed and was rolled back.",
                     [(f"sum by (pod, partition) (rate(rill_stream_processor_processing_errors_total{{{PART}}}[$__rate_interval]))",
                       "{{pod}} p{{partition}}")], unit="ops"), 24, 6)

    g.row("Exporters")
    g.add(timeseries("Exporter lag",
                     "Records handed to an exporter and not yet exported. Export entries below "
                     "the slowest exporter are kept on disk, so a growing lag grows the data volume.",
                     [(f"max by (exporter, partition) (rill_exporter_lag_records{{{PART}}})",
                       "{{exporter}} p{{partition}}")]), 12, 8)
    g.add(timeseries("Records exported",
                     "Rate at which the exported position advances.",
                     [(f"sum by (exporter) (rate(rill_exporter_last_exported_position{{{PART}}}[$__rate_interval]))",
                       "{{exporter}}")], unit="ops"), 12, 8)
    g.add(timeseries("Failed requests by reason",
                     "Requests to the export target that failed and are retried.",
                     [(f"sum by (exporter, reason) (rate(rill_exporter_failed_requests_total{{{PART}}}[$__rate_interval]))",
                       "{{exporter}} {{reason}}"),
                      (f"sum by (exporter, error_type) (rate(rill_exporter_dropped_records_total{{{PART}}}[$__rate_interval]))",
                       "dropped {{exporter}} {{error_type}}")], unit="ops"), 12, 8)
    g.add(timeseries("Flush duration",
                     "Time to ship one bulk request (or file write), retries included.",
                     quantiles("rill_exporter_flush_duration_seconds", PART, ", exporter", " {{exporter}}"), unit="s"), 12, 8)

    g.row("Storage")
    g.add(timeseries("Data disk used, against the watermarks",
                     "What each broker samples of its data directory's disk every second, and the "
                     "watermarks it compares it with: at data.disk-usage-command-watermark new "
                     "commands are refused, at data.disk-usage-replication-watermark log entries "
                     "from leaders.",
                     [(f"max by (pod) (rill_disk_usage_ratio{{{SEL}}})", "{{pod}}"),
                      (f"min(rill_disk_command_watermark_ratio{{{SEL}}})", "command watermark"),
                      (f"min(rill_disk_replication_watermark_ratio{{{SEL}}})", "replication watermark")],
                     unit="percentunit"), 12, 8)
    g.add(timeseries("Failing disk writes",
                     "Partitions whose disk writes fail and are retried: they take no commands "
                     "and report unhealthy until a write succeeds (docs/decisions/disk-full.md).",
                     [(f"sum by (pod) (rill_storage_write_failing{{{PART}}})", "{{pod}}")]), 12, 8)
    g.add(timeseries("Data volume used",
                     "Kubelet volume statistics of the brokers' PersistentVolumeClaims.",
                     [('max by (persistentvolumeclaim) (kubelet_volume_stats_used_bytes{namespace=~"$namespace", persistentvolumeclaim=~"data-.+-broker-[0-9]+"} / '
                       'kubelet_volume_stats_capacity_bytes{namespace=~"$namespace", persistentvolumeclaim=~"data-.+-broker-[0-9]+"})',
                       "{{persistentvolumeclaim}}")], unit="percentunit"), 24, 8)

    g.row("Backups")
    g.add(stat("Since the last completed backup",
               "Time since the newest completed backup part in the store was written "
               "(docs/operations.md); the alert RillNoRecentBackup fires past 26 hours.",
               f"time() - max(rill_backup_last_completed_timestamp_seconds{{{SEL}}} > 0)", unit="s",
               thresholds=[{"color": "green", "value": None},
                           {"color": "orange", "value": 26 * 3600}]), 8, 8)
    g.add(timeseries("Backup operations",
                     "Parts taken, backups deleted (API or retention) and scheduled backups "
                     "asked for, by result.",
                     [(f"sum by (operation, result) (increase(rill_backup_operations_total{{{SEL}}}[$__rate_interval]))",
                       "{{operation}} {{result}}")]), 8, 8)
    g.add(timeseries("Backup part duration",
                     "Time to write one partition's part into the store.",
                     [(f"max by (pod) (rate(rill_backup_duration_seconds_sum{{{SEL}}}[$__rate_interval]) / "
                       f"rate(rill_backup_duration_seconds_count{{{SEL}}}[$__rate_interval]))", "{{pod}}")],
                     unit="s"), 8, 8)

    g.row("Transport")
    g.add(timeseries("Open connections",
                     "Connections between brokers and from gateways, by direction.",
                     [(f"sum by (pod, direction) (rill_transport_connections_open{{{SEL}}})", "{{pod}} {{direction}}")]), 8, 8)
    g.add(timeseries("Bytes sent and received",
                     "Internal transport traffic.",
                     [(f"sum by (pod) (rate(rill_transport_bytes_sent_total{{{SEL}}}[$__rate_interval]))", "sent {{pod}}"),
                      (f"sum by (pod) (rate(rill_transport_bytes_received_total{{{SEL}}}[$__rate_interval]))", "received {{pod}}")],
                     unit="Bps"), 8, 8)
    g.add(timeseries("Connect failures",
                     "Failed connects or handshakes to peers: a broker unreachable or refusing.",
                     [(f"sum by (pod) (rate(rill_transport_connect_failures_total{{{SEL}}}[$__rate_interval]))", "{{pod}}")],
                     unit="ops"), 8, 8)

    return {
        "uid": "rill-cluster",
        "title": "Rill cluster",
        "description": "Throughput, latency, flow control, raft health, exporters, storage and backups of a Rill cluster.",
        "tags": ["rill", "bpmn"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "refresh": 1},
            variable("namespace", "Namespace", "label_values(rill_raft_role, namespace)"),
            variable("job", "Service", 'label_values(up{namespace=~"$namespace", job=~".+-(broker|gateway)"}, job)'),
            variable("partition", "Partition", 'label_values(rill_raft_role{namespace=~"$namespace"}, partition)'),
        ]},
        "panels": g.panels,
    }


def render():
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("rill-dashboard.json")
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out}")
