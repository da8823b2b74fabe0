// Peer: npm `bpmn-engine`, in memory (no durability), running the same
// two-rest-calls.bpmn as Rill, with the same shape: S starters create instances, W
// workers run the service tasks (a GET of the shared HTTP stub with a random `v`).
//
// The model is parsed once; every instance is an Engine on the shared source context
// (bpmn-engine's way to avoid re-parsing). Service tasks are handed to a job queue
// served by W worker loops, so at most W calls are in flight, as with W job workers.
// An instance has completed when its engine emits `end`.
//
// Usage: node bench.mjs --bpmn FILE --stub URL [--instances N] [--starters S]
//        [--workers W] [--json FILE]

import fs from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import { Engine } from 'bpmn-engine';
import * as Elements from 'bpmn-elements';
import BpmnModdle from 'bpmn-moddle';
import serializer, { TypeResolver } from 'moddle-context-serializer';

const { values: args } = parseArgs({
  options: {
    bpmn: { type: 'string' },
    stub: { type: 'string' },
    instances: { type: 'string', default: '100000' },
    starters: { type: 'string', default: '8' },
    workers: { type: 'string', default: '16' },
    json: { type: 'string' },
  },
});
const instances = Number(args.instances);
const starters = Number(args.starters);
const workers = Number(args.workers);
if (!args.bpmn || !args.stub) {
  console.error('usage: node bench.mjs --bpmn FILE --stub URL [--instances N] ...');
  process.exit(2);
}

const moddleContext = await new BpmnModdle().fromXML(fs.readFileSync(args.bpmn, 'utf8'));
const sourceContext = serializer(moddleContext, TypeResolver({ ...Elements }));

// The job queue and its W workers.
const jobs = [];
const idle = [];
function submit(job) {
  const worker = idle.pop();
  if (worker) worker(job);
  else jobs.push(job);
}
function take() {
  if (jobs.length) return Promise.resolve(jobs.shift());
  return new Promise((resolve) => idle.push(resolve));
}
const agent = new http.Agent({ keepAlive: true, maxSockets: workers });
function callStub() {
  const url = `${args.stub}?v=${Math.floor(Math.random() * 2 ** 52)}`;
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`stub ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}
async function worker() {
  for (;;) {
    const job = await take();
    if (job === null) return;
    try {
      await callStub();
      job.callback(null, {});
    } catch (err) {
      job.callback(err);
    }
  }
}

// Every service task (whatever its zeebe:taskDefinition) becomes a job on the queue.
function restCallExtension(activity) {
  if (activity.type !== 'bpmn:ServiceTask') return;
  activity.behaviour.Service = function RestCall() {
    return {
      type: 'bench:restCall',
      execute(_message, callback) {
        submit({ callback });
      },
    };
  };
}

// Measurement.
const milestones = [];
for (let m = 1000; m < instances; m *= 10) milestones.push(m);
milestones.push(instances);
const reached = [];
const latencies = new Float64Array(instances);
let completed = 0;
let jobsDone = 0;
let started = 0;
let failed = 0;
let firstStart;
let cpu0;
let finish;
const finished = new Promise((resolve) => (finish = resolve));

function percentile(sorted, p) {
  if (!sorted.length) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

function onCompleted(t0) {
  const now = performance.now();
  latencies[completed] = now - t0;
  completed += 1;
  jobsDone += 2;
  if (completed === milestones[reached.length]) {
    const elapsed = (now - firstStart) / 1000;
    const sorted = latencies.slice(0, completed).sort();
    const cpu = process.cpuUsage(cpu0);
    reached.push({
      instances: completed,
      elapsed_s: elapsed,
      instances_per_s: completed / elapsed,
      jobs_per_s: jobsDone / elapsed,
      latency: { p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99), max_ms: sorted[sorted.length - 1] },
      cpu_s: (cpu.user + cpu.system) / 1e6,
    });
  }
  if (completed === instances) finish();
}

async function startOne() {
  const t0 = performance.now();
  const engine = new Engine({ name: 'two-rest-calls', sourceContext, extensions: { restCall: restCallExtension } });
  engine.once('end', () => onCompleted(t0));
  engine.once('error', (err) => {
    failed += 1;
    console.error('instance failed:', err.message);
  });
  await engine.execute();
}

async function starter() {
  while (started < instances) {
    started += 1;
    await startOne();
  }
}

for (let i = 0; i < workers; i++) worker();
firstStart = performance.now();
cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: starters }, starter));
await finished;
for (let i = 0; i < workers; i++) submit(null);
agent.destroy();

const result = { system: 'bpmn-engine', durable: false, instances, starters, workers, failed, milestones: reached };
for (const m of reached) {
  console.log(
    `${String(m.instances).padStart(9)} ${m.elapsed_s.toFixed(2).padStart(8)} s ${m.instances_per_s.toFixed(0).padStart(8)} inst/s ` +
      `${m.jobs_per_s.toFixed(0).padStart(8)} jobs/s  p50 ${m.latency.p50_ms.toFixed(1)} ms  p99 ${m.latency.p99_ms.toFixed(1)} ms  ` +
      `max ${m.latency.max_ms.toFixed(1)} ms  cpu ${m.cpu_s.toFixed(1)} s`
  );
}
if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 2));
