// Drives a running Rill gateway with Camunda's npm SDK (8.8 API), unmodified: deploy,
// create, activate and complete jobs, see the instance finish, search process instances,
// jobs, incidents and variables (with the SDK's eventual-consistency polling), publish a
// message, work a user task, deploy a DMN with a form and a process, evaluate a decision
// and run a business rule task. Exits non-zero on the first failed check.
//
// Usage: CAMUNDA_REST_ADDRESS=http://127.0.0.1:8080 node sdk_flow.mjs EXAMPLES_DIR
//
// The SDK's schema validation is off by default, as for its users. Rill answers in the
// 8.8 schema's shapes (see docs/decisions/rest-api.md), which
// CAMUNDA_SDK_VALIDATION=res:warn checks.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import createCamundaClient from '@camunda8/orchestration-cluster-api';

function check(condition, message) {
  if (!condition) {
    console.log(`FAILED: ${message}`);
    process.exit(1);
  }
  console.log(`ok: ${message}`);
}

const examples = process.argv[2];
// Authentication as run.sh sets it: NONE, BASIC with a username and password, or OAUTH
// with client credentials from a token endpoint.
const authByStrategy = {
  BASIC: {
    CAMUNDA_AUTH_STRATEGY: 'BASIC',
    CAMUNDA_BASIC_AUTH_USERNAME: process.env.CAMUNDA_BASIC_AUTH_USERNAME,
    CAMUNDA_BASIC_AUTH_PASSWORD: process.env.CAMUNDA_BASIC_AUTH_PASSWORD,
  },
  OAUTH: {
    CAMUNDA_AUTH_STRATEGY: 'OAUTH',
    CAMUNDA_OAUTH_URL: process.env.CAMUNDA_OAUTH_URL,
    CAMUNDA_CLIENT_ID: process.env.CAMUNDA_CLIENT_ID,
    CAMUNDA_CLIENT_SECRET: process.env.CAMUNDA_CLIENT_SECRET,
    CAMUNDA_TOKEN_AUDIENCE: process.env.CAMUNDA_TOKEN_AUDIENCE,
  },
};
const auth = authByStrategy[process.env.CAMUNDA_AUTH_STRATEGY] ?? { CAMUNDA_AUTH_STRATEGY: 'NONE' };
const client = createCamundaClient({
  config: {
    CAMUNDA_REST_ADDRESS: process.env.CAMUNDA_REST_ADDRESS,
    ...auth,
    CAMUNDA_SDK_VALIDATION: process.env.CAMUNDA_SDK_VALIDATION ?? 'req:strict,res:none',
  },
});

const topology = await client.getTopology();
check(topology.partitionsCount >= 1, `topology lists ${topology.partitionsCount} partition(s)`);

const deployment = await client.deployResourcesFromFiles([path.join(examples, 'two-rest-calls.bpmn')]);
check(deployment.processes[0].processDefinitionId === 'two-rest-calls', `deployed ${deployment.deploymentKey}`);

const created = await client.createProcessInstance({
  processDefinitionId: 'two-rest-calls',
  variables: { orderId: 'node-1' },
});
const key = created.processInstanceKey;
check(typeof key === 'string', `created instance ${key}`);

let done = 0;
const deadline = Date.now() + 30_000;
while (done < 2 && Date.now() < deadline) {
  const { jobs } = await client.activateJobs({
    type: 'restCall',
    timeout: 30_000,
    maxJobsToActivate: 2 - done,
    requestTimeout: 2_000,
    worker: 'node-sdk',
  });
  for (const job of jobs) {
    await client.completeJob({ jobKey: job.jobKey, variables: { status: 200 } });
    done += 1;
  }
}
check(done === 2, 'completed both jobs');

const instance = await client.getProcessInstance({ processInstanceKey: key }, { consistency: { waitUpToMs: 0 } });
check(instance.state === 'COMPLETED', `the instance finished (${instance.state})`);

const incidents = await client.searchIncidents({ filter: { processInstanceKey: key } }, { consistency: { waitUpToMs: 0 } });
check(incidents.page.totalItems === 0, 'the instance has no incidents');

// Searches as the SDK's README shows them, polling until the history has the answer.
const poll = (predicate) => ({ consistency: { waitUpToMs: 10_000, pollIntervalMs: 100, predicate } });
const found = await client.searchProcessInstances(
  { filter: { processDefinitionId: 'two-rest-calls' } },
  poll((r) => r.items.some((i) => i.processInstanceKey === key && i.state === 'COMPLETED')),
);
const mine = found.items.filter((i) => i.processInstanceKey === key);
check(mine.length === 1 && typeof mine[0].endDate === 'string', `searchProcessInstances finds the finished instance (${found.page.totalItems} in all)`);
const active = await client.searchProcessInstances(
  { filter: { processDefinitionId: 'two-rest-calls', state: 'ACTIVE' } },
  { consistency: { waitUpToMs: 0 } },
);
check(active.page.totalItems === 0, 'a state filter leaves it out');
const jobs = await client.searchJobs(
  { filter: { processInstanceKey: key } },
  poll((r) => r.items.length === 2 && r.items.every((j) => j.state === 'COMPLETED')),
);
const elements = jobs.items.map((j) => j.elementId).sort().join(',');
check(elements === 'Rest1,Rest2' && jobs.items.every((j) => j.worker === 'node-sdk' && j.type === 'restCall'), `searchJobs finds both jobs of the instance (${elements})`);
const failed = await client.searchJobs({ filter: { type: 'restCall', state: 'FAILED' } }, { consistency: { waitUpToMs: 0 } });
check(failed.page.totalItems === 0, 'no job failed');
const variables = await client.searchVariables(
  { filter: { processInstanceKey: key } },
  poll((r) => r.items.length === 2),
);
const byName = Object.fromEntries(variables.items.map((v) => [v.name, v.value]));
check(byName.orderId === '"node-1"' && byName.status === '200', `searchVariables finds the instance's variables ${JSON.stringify(byName)}`);

const published = await client.publishMessage({ name: 'nobody-waits', correlationKey: 'k' });
check(typeof published.messageKey === 'string', `published message ${published.messageKey}`);

// A Camunda user task that links a form deployed with it: search, assign, complete.
const workdir = mkdtempSync(path.join(os.tmpdir(), 'rill-node-'));
const reviewBpmn = path.join(workdir, 'review.bpmn');
writeFileSync(reviewBpmn, `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="review-defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="node-review" name="Review" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="approve" name="Approve">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:formDefinition formId="node-approval" />
        <zeebe:assignmentDefinition candidateGroups="reviewers" />
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`);
const approvalForm = path.join(workdir, 'approval.form');
writeFileSync(approvalForm, JSON.stringify({
  id: 'node-approval', type: 'default',
  components: [{ key: 'approved', type: 'checkbox', label: 'Approve' }],
}));
const reviewDeployment = await client.deployResourcesFromFiles([reviewBpmn, approvalForm]);
check(reviewDeployment.forms.length === 1 && reviewDeployment.forms[0].formId === 'node-approval', `deployed the form with the process (${reviewDeployment.forms[0]?.formKey})`);
const review = await client.createProcessInstance({ processDefinitionId: 'node-review' });
const tasks = await client.searchUserTasks(
  { filter: { processInstanceKey: review.processInstanceKey } },
  poll((r) => r.items.length === 1),
);
check(tasks.items.length === 1 && tasks.items[0].state === 'CREATED', `searchUserTasks finds the task (${tasks.items[0]?.userTaskKey})`);
const userTaskKey = tasks.items[0].userTaskKey;
check(tasks.items[0].candidateGroups.join() === 'reviewers', 'it is offered to the group reviewers');
const linked = await client.getUserTaskForm({ userTaskKey }, { consistency: { waitUpToMs: 0 } });
check(linked.formId === 'node-approval', `its linked form is ${linked.formId}`);
await client.assignUserTask({ userTaskKey, assignee: 'demo' });
const assigned = await client.getUserTask({ userTaskKey }, { consistency: { waitUpToMs: 0 } });
check(assigned.assignee === 'demo', 'assigned to demo');
await client.completeUserTask({ userTaskKey, variables: { approved: true } });
const reviewed = await client.getProcessInstance(
  { processInstanceKey: review.processInstanceKey },
  poll((r) => r.state === 'COMPLETED'),
);
check(reviewed.state === 'COMPLETED', 'completing the user task finished the instance');

// DMN: a BPMN with a business rule task, the DMN it calls and a form deployed together;
// the decision evaluated by id and by key; the business rule task run.
const feedbackForm = path.join(workdir, 'feedback.form');
writeFileSync(feedbackForm, JSON.stringify({
  id: 'node-dinner-feedback', type: 'default',
  components: [{ key: 'liked', type: 'checkbox', label: 'Liked it' }],
}));
const dinner = await client.deployResourcesFromFiles([
  path.join(examples, 'dinner.bpmn'), path.join(examples, 'dish.dmn'), feedbackForm,
]);
const decisionIds = dinner.decisions.map((d) => d.decisionDefinitionId).sort();
check(decisionIds.join() === 'dish,menu,season', `deployed the decisions ${decisionIds}`);
check(
  dinner.decisionRequirements.map((r) => r.decisionRequirementsId).join() === 'DishDecisions'
    && dinner.processes.map((p) => p.processDefinitionId).join() === 'dinner'
    && dinner.forms.map((f) => f.formId).join() === 'node-dinner-feedback',
  'with its requirements graph, the process and the form',
);
const byId = await client.evaluateDecision({
  decisionDefinitionId: 'dish', variables: { month: 1, guestCount: 4 },
});
check(byId.output === '"Roastbeef"', `dish by id: ${byId.output}`);
const order = byId.evaluatedDecisions.map((d) => d.decisionDefinitionId).join();
check(order === 'season,dish', `required decisions first: ${order}`);
const dishKey = dinner.decisions.find((d) => d.decisionDefinitionId === 'dish').decisionDefinitionKey;
const byKey = await client.evaluateDecision({
  decisionDefinitionKey: dishKey, variables: { month: 10, guestCount: 2 },
});
check(byKey.output === '"Spareribs"', `dish by key: ${byKey.output}`);
const dinnerInstance = await client.createProcessInstance({
  processDefinitionId: 'dinner', variables: { month: 1, guestCount: 4 },
});
let cooked = 0;
const cookDeadline = Date.now() + 30_000;
while (cooked < 1 && Date.now() < cookDeadline) {
  const { jobs } = await client.activateJobs({
    type: 'cook', timeout: 30_000, maxJobsToActivate: 1, requestTimeout: 2_000, worker: 'node-sdk',
  });
  for (const job of jobs) {
    await client.completeJob({ jobKey: job.jobKey, variables: {} });
    cooked += 1;
  }
}
check(cooked === 1, 'cooked after the business rule task');
const dinnerDone = await client.getProcessInstance(
  { processInstanceKey: dinnerInstance.processInstanceKey },
  poll((r) => r.state === 'COMPLETED'),
);
check(dinnerDone.state === 'COMPLETED', 'the dinner instance finished');
const dish = await client.searchVariables(
  { filter: { processInstanceKey: dinnerInstance.processInstanceKey, name: 'dish' } },
  poll((r) => r.items.length === 1),
);
check(dish.items.map((v) => v.value).join() === '"Roastbeef"', `the business rule task set dish: ${dish.items.map((v) => v.value)}`);
const decisionInstances = await client.searchDecisionInstances(
  { filter: { processInstanceKey: dinnerInstance.processInstanceKey } },
  poll((r) => r.items.length >= 1),
);
check(
  decisionInstances.items.length >= 1
    && decisionInstances.items.every((i) => i.processInstanceKey === dinnerInstance.processInstanceKey),
  `its decision instances are searchable (${decisionInstances.page.totalItems})`,
);

console.log('all checks passed');
