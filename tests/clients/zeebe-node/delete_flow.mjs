// Process definition deletion with @camunda8/sdk's ZeebeGrpcClient, unmodified from npm:
// version 2 of a process is deleted while an instance of it runs; new instances of it
// are refused with NOT_FOUND, the latest is version 1 again, the running instance
// completes, and then the definition is gone (deleting it again is NOT_FOUND).
//
//   node delete_flow.mjs HOST:PORT   (prints "all checks passed" at the end)

import { Camunda8 } from '@camunda8/sdk'

const [address] = process.argv.slice(2)

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`ok: ${what}`)
}

const model = (jobType) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="sdk-delete" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="Work"><bpmn:extensionElements><zeebe:taskDefinition type="${jobType}" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="Work" />
    <bpmn:sequenceFlow id="f2" sourceRef="Work" targetRef="end" />
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
      worker: 'sdk-delete',
      maxJobsToActivate: 1,
      timeout: 60000,
      requestTimeout: 1000,
    })
    if (jobs.length > 0) return jobs[0]
  }
  throw new Error(`no job of type ${type}`)
}

async function refusal(operation) {
  try {
    await operation()
  } catch (error) {
    return error
  }
  return undefined
}

async function main() {
  const deploy = async (jobType) =>
    (await zbc.deployResource({ name: 'sdk-delete.bpmn', process: Buffer.from(model(jobType)) }))
      .deployments[0].process
  const v1 = await deploy('sdk-delete-one')
  const v2 = await deploy('sdk-delete-two')
  check(v2.version === 2, 'version 2 deployed')

  const running = await zbc.createProcessInstance({ bpmnProcessId: 'sdk-delete', variables: {} })
  check(running.version === 2, 'an instance of version 2 runs')
  const job = await oneJob('sdk-delete-two')

  await zbc.deleteResource({ resourceKey: v2.processDefinitionKey })
  console.log('ok: version 2 deleted while its instance runs')

  const refused = await refusal(() =>
    zbc.createProcessInstance({ bpmnProcessId: 'sdk-delete', version: 2, variables: {} })
  )
  check(refused && refused.code === 5, `version 2 cannot be created: NOT_FOUND (${refused?.message})`)
  const latest = await zbc.createProcessInstance({ bpmnProcessId: 'sdk-delete', variables: {} })
  check(
    latest.version === 1 && latest.processDefinitionKey === v1.processDefinitionKey,
    'the latest is version 1 again'
  )

  const waiting = await refusal(() => zbc.deleteResource({ resourceKey: v2.processDefinitionKey }))
  check(
    waiting && waiting.code === 9,
    `deleting it again while its instance runs is FAILED_PRECONDITION (${waiting?.message})`
  )
  await zbc.completeJob({ jobKey: job.key, variables: {} })
  let gone
  for (let attempt = 0; attempt < 50 && !(gone && gone.code === 5); attempt++) {
    gone = await refusal(() => zbc.deleteResource({ resourceKey: v2.processDefinitionKey }))
    if (!(gone && gone.code === 5)) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  check(gone && gone.code === 5, `once the instance completed, version 2 is gone: NOT_FOUND (${gone?.message})`)

  console.log('all checks passed')
}

main()
  .then(() => zbc.close())
  .then(() => process.exit(0))
  .catch((error) => {
    console.error(error)
    process.exit(1)
  })
