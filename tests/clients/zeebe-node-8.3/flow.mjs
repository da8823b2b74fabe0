// Drives a Rill gateway over Zeebe's gRPC API with zeebe-node 8.3, unmodified from npm:
// topology, deploy, create with result with a polling and a batch worker, a buffered
// message correlating (and its duplicate refused), a cancelled instance, a job failed
// without retries raising an incident that is resolved.
//
//   node flow.mjs HOST:PORT EXAMPLES_DIR   (prints "all checks passed" at the end)

import { join } from 'node:path'
import { ZBClient } from 'zeebe-node'

const [address, examples] = process.argv.slice(2)

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`ok: ${what}`)
}

const zbc = new ZBClient(address, { useTLS: false, loglevel: 'NONE', retry: false })

async function runTwoRestCalls(label, times) {
  for (let i = 0; i < times; i++) {
    const result = await zbc.createProcessInstanceWithResult({
      bpmnProcessId: 'two-rest-calls',
      variables: { steps: 0 },
      requestTimeout: 20000,
      fetchVariables: ['steps'],
    })
    check(result.variables.steps === 2, `${label}: both jobs completed (${JSON.stringify(result.variables)})`)
  }
}

async function main() {
  const topology = await zbc.topology()
  check(topology.brokers.length >= 1, 'topology names the brokers')
  check(Number(topology.partitionsCount) >= 1, 'topology counts the partitions')

  for (const file of ['two-rest-calls.bpmn', 'order-fulfilment.bpmn']) {
    const deployed = await zbc.deployResource({ processFilename: join(examples, file) })
    check(deployed.deployments.length === 1 && deployed.deployments[0].process, `deployed ${file}`)
  }

  const handler = (job) => job.complete({ steps: Number(job.variables.steps ?? 0) + 1 })
  const worker = zbc.createWorker({ taskType: 'restCall', taskHandler: handler, timeout: 30000, pollInterval: 300 })
  await runTwoRestCalls('polling worker', 3)
  await worker.close()

  const batch = zbc.createBatchWorker({
    taskType: 'restCall',
    taskHandler: (jobs) => jobs.forEach((job) => job.complete({ steps: Number(job.variables.steps ?? 0) + 1 })),
    jobBatchMinSize: 1,
    jobBatchMaxTime: 1,
    timeout: 30000,
    pollInterval: 300,
  })
  await runTwoRestCalls('batch worker', 2)
  await batch.close()

  await zbc.publishMessage({
    name: 'shipment-confirmed',
    correlationKey: 'order-83',
    variables: { carrier: 'post' },
    timeToLive: 60000,
    messageId: 'ship-order-83',
  })
  let refused = null
  try {
    await zbc.publishMessage({
      name: 'shipment-confirmed',
      correlationKey: 'order-83',
      variables: {},
      timeToLive: 60000,
      messageId: 'ship-order-83',
    })
  } catch (e) {
    refused = e
  }
  check(refused !== null && /ALREADY_EXISTS|already/i.test(String(refused)), `a second message with the same id is refused (${refused})`)

  const orderWorkers = [
    zbc.createWorker({ taskType: 'charge-card', taskHandler: (job) => job.complete({ transactionId: `tx-${job.variables.order.total}` }), pollInterval: 300 }),
    zbc.createWorker({ taskType: 'pack', taskHandler: (job) => job.complete({ packed: true }), pollInterval: 300 }),
    zbc.createWorker({ taskType: 'invoice', taskHandler: (job) => job.complete({ invoiced: true }), pollInterval: 300 }),
  ]
  const order = { id: 'order-83', total: 40, customer: { id: 'c-1' } }
  const shipped = await zbc.createProcessInstanceWithResult({
    bpmnProcessId: 'order-fulfilment',
    variables: { order },
    requestTimeout: 30000,
  })
  check(shipped.variables.carrier === 'post', "the buffered message's variables arrived")
  check(shipped.variables.payment?.transactionId === 'tx-40', "the charge-card job's output was mapped")
  await Promise.all(orderWorkers.map((w) => w.close()))

  const waiting = await zbc.createProcessInstance({ bpmnProcessId: 'two-rest-calls', variables: { steps: 0 } })
  await zbc.cancelProcessInstance(waiting.processInstanceKey)
  let gone = null
  try {
    await zbc.cancelProcessInstance(waiting.processInstanceKey)
  } catch (e) {
    gone = e
  }
  check(gone !== null && /NOT_FOUND/.test(String(gone)), `a cancelled instance is gone (${gone})`)

  // A job failed with no retries left raises an incident; more retries and a resolved
  // incident let a worker take it again.
  const failing = await zbc.createProcessInstance({ bpmnProcessId: 'two-rest-calls', variables: { steps: 0 } })
  const [job] = await zbc.activateJobs({ type: 'restCall', worker: 'zeebe-node-8.3', maxJobsToActivate: 1, timeout: 30000, requestTimeout: 10000 })
  check(job && job.processInstanceKey === failing.processInstanceKey, 'the waiting job is activated')
  await zbc.failJob({ jobKey: job.key, retries: 0, errorMessage: 'no retries', retryBackOff: 0 })
  const incident = await findIncident(failing.processInstanceKey)
  await zbc.updateJobRetries({ jobKey: job.key, retries: 1 })
  await zbc.resolveIncident({ incidentKey: incident })
  const again = zbc.createWorker({ taskType: 'restCall', taskHandler: handler, pollInterval: 300 })
  await waitCompleted(failing.processInstanceKey)
  await again.close()

  await zbc.close()
  console.log('all checks passed')
}

// The REST API is the way to read incidents; the gRPC API has no query.
async function findIncident(processInstanceKey) {
  const rest = process.env.RILL_REST_ADDRESS
  for (let i = 0; i < 100; i++) {
    const answer = await fetch(`${rest}/v2/incidents/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ filter: { processInstanceKey } }),
    }).then((r) => r.json())
    if (answer.items?.length) {
      check(answer.items[0].errorType === 'JOB_NO_RETRIES', `the failed job raised an incident (${answer.items[0].errorType})`)
      return answer.items[0].incidentKey
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error('check failed: no incident for the failed job')
}

async function waitCompleted(processInstanceKey) {
  const rest = process.env.RILL_REST_ADDRESS
  for (let i = 0; i < 150; i++) {
    const answer = await fetch(`${rest}/v2/process-instances/${processInstanceKey}`).then((r) => r.json())
    if (answer.state === 'COMPLETED') {
      check(true, 'after the incident was resolved, the instance completed')
      return
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error('check failed: the instance did not complete after the incident was resolved')
}

main().catch(async (e) => {
  console.error(e)
  await zbc.close().catch(() => {})
  process.exit(1)
})
