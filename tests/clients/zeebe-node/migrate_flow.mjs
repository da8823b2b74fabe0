// Process instance migration with @camunda8/sdk's ZeebeGrpcClient, unmodified from
// npm: an instance of version 1 waiting at task A moves to version 2 (A renamed A2,
// task B added after it) and goes on there; bad requests are refused with Zeebe's codes.
//
//   node migrate_flow.mjs HOST:PORT   (prints "all checks passed" at the end)

import { Camunda8 } from '@camunda8/sdk'

const [address] = process.argv.slice(2)

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`ok: ${what}`)
}

const definitions = (body) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="sdk-migrate" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${body}
  </bpmn:process>
</bpmn:definitions>`

const task = (id, type) =>
  `<bpmn:serviceTask id="${id}"><bpmn:extensionElements><zeebe:taskDefinition type="${type}" /></bpmn:extensionElements></bpmn:serviceTask>`

const V1 = definitions(`${task('A', 'sdk-mig-a')}
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="A" />
    <bpmn:sequenceFlow id="f2" sourceRef="A" targetRef="end" />`)

const V2 = definitions(`${task('A2', 'sdk-mig-a')}
    ${task('B', 'sdk-mig-b')}
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="A2" />
    <bpmn:sequenceFlow id="f2" sourceRef="A2" targetRef="B" />
    <bpmn:sequenceFlow id="f3" sourceRef="B" targetRef="end" />`)

const c8 = new Camunda8({
  ZEEBE_GRPC_ADDRESS: `grpc://${address}`,
  CAMUNDA_AUTH_STRATEGY: 'NONE',
  zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: 'NONE' },
})
const zbc = c8.getZeebeGrpcApiClient()

async function oneJob(type) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const jobs = await zbc.activateJobs({
      type,
      worker: 'sdk-migrate',
      maxJobsToActivate: 1,
      timeout: 60000,
      requestTimeout: 1000,
    })
    if (jobs.length > 0) return jobs[0]
  }
  throw new Error(`no job of type ${type}`)
}

async function refusal(request) {
  try {
    await zbc.migrateProcessInstance(request)
  } catch (error) {
    return error
  }
  return undefined
}

async function main() {
  await zbc.deployResource({ name: 'sdk-migrate.bpmn', process: Buffer.from(V1) })
  const created = await zbc.createProcessInstance({ bpmnProcessId: 'sdk-migrate', variables: {} })
  const instance = created.processInstanceKey
  const a = await oneJob('sdk-mig-a')
  check(a.processInstanceKey === instance && a.elementId === 'A', 'task A of version 1 waits')

  const deployed = await zbc.deployResource({ name: 'sdk-migrate.bpmn', process: Buffer.from(V2) })
  const v2 = deployed.deployments[0].process
  check(v2.version === 2, 'version 2 deployed')
  const plan = (mappingInstructions, targetProcessDefinitionKey = v2.processDefinitionKey) => ({
    processInstanceKey: instance,
    migrationPlan: { targetProcessDefinitionKey, mappingInstructions },
  })

  let refused = await refusal(plan([{ sourceElementId: 'Nope', targetElementId: 'A2' }]))
  check(refused && refused.code === 3, `an unknown source element is INVALID_ARGUMENT (${refused?.message})`)
  refused = await refusal(plan([{ sourceElementId: 'A', targetElementId: 'A2' }], '2251799813685999'))
  check(refused && refused.code === 5, `an unknown target definition is NOT_FOUND (${refused?.message})`)
  refused = await refusal(plan([]))
  check(
    refused && refused.code === 9 && refused.message.includes("'A'"),
    `an unmapped active element is FAILED_PRECONDITION (${refused?.message})`,
  )

  await zbc.migrateProcessInstance({
    ...plan([{ sourceElementId: 'A', targetElementId: 'A2' }]),
    operationReference: 11,
  })
  // The job activated before the migration is the same job: completing it goes on in
  // version 2, to B.
  await zbc.completeJob({ jobKey: a.key, variables: {} })
  const b = await oneJob('sdk-mig-b')
  check(b.processInstanceKey === instance, 'the instance went on to B of version 2')
  check(b.processDefinitionVersion === 2, 'B is of version 2')
  await zbc.completeJob({ jobKey: b.key, variables: {} })
  console.log('all checks passed')
}

main()
  .then(() => zbc.close())
  .then(() => process.exit(0))
  .catch((error) => {
    console.error(error)
    process.exit(1)
  })
