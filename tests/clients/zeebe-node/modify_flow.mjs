// Process instance modification with @camunda8/sdk's ZeebeGrpcClient, unmodified from
// npm: an instance waiting at its first task is moved to the second task with a
// variable, and an instruction for an unknown element is refused with INVALID_ARGUMENT.
//
//   node modify_flow.mjs HOST:PORT   (prints "all checks passed" at the end)

import { Camunda8 } from '@camunda8/sdk'

const [address] = process.argv.slice(2)

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`ok: ${what}`)
}

const MODEL = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="sdk-modify" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="First"><bpmn:extensionElements><zeebe:taskDefinition type="sdk-first" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="Second"><bpmn:extensionElements><zeebe:taskDefinition type="sdk-second" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="First" />
    <bpmn:sequenceFlow id="f2" sourceRef="First" targetRef="Second" />
    <bpmn:sequenceFlow id="f3" sourceRef="Second" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`

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
      worker: 'sdk-modify',
      maxJobsToActivate: 1,
      timeout: 60000,
      requestTimeout: 1000,
    })
    if (jobs.length > 0) return jobs[0]
  }
  throw new Error(`no job of type ${type}`)
}

async function main() {
  await zbc.deployResource({ name: 'sdk-modify.bpmn', process: Buffer.from(MODEL) })
  const created = await zbc.createProcessInstance({ bpmnProcessId: 'sdk-modify', variables: {} })
  const instance = created.processInstanceKey
  const first = await oneJob('sdk-first')
  check(first.processInstanceKey === instance, 'the first task waits')

  let refused
  try {
    await zbc.modifyProcessInstance({
      processInstanceKey: instance,
      activateInstructions: [
        { elementId: 'Nope', ancestorElementInstanceKey: '-1', variableInstructions: [] },
      ],
    })
  } catch (error) {
    refused = error
  }
  check(refused && refused.code === 3, `an unknown element is INVALID_ARGUMENT (${refused?.message})`)

  await zbc.modifyProcessInstance({
    processInstanceKey: instance,
    activateInstructions: [
      {
        elementId: 'Second',
        ancestorElementInstanceKey: '-1',
        variableInstructions: [{ scopeId: '', variables: { skipped: 'First' } }],
      },
    ],
    terminateInstructions: [{ elementInstanceKey: first.elementInstanceKey }],
    operationReference: 5,
  })
  const second = await oneJob('sdk-second')
  check(second.processInstanceKey === instance, 'the second task is active')
  check(second.variables.skipped === 'First', 'with the variable of the instruction')
  await zbc.completeJob({ jobKey: second.key, variables: {} })

  let gone
  try {
    await zbc.completeJob({ jobKey: first.key, variables: {} })
  } catch (error) {
    gone = error
  }
  check(gone && gone.code === 5, 'the first task\'s job went with it (NOT_FOUND)')
  console.log('all checks passed')
}

main()
  .then(() => zbc.close())
  .then(() => process.exit(0))
  .catch((error) => {
    console.error(error)
    process.exit(1)
  })
