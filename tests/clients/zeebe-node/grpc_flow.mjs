// Drives a Rill gateway over Zeebe's gRPC API with @camunda8/sdk's ZeebeGrpcClient,
// unmodified from npm: topology, deploy, createProcessInstanceWithResult with a polling
// worker, then with a streamJobs worker, and a DMN deployed and evaluated.
//
//   node grpc_flow.mjs HOST:PORT EXAMPLES_DIR   (prints "all checks passed" at the end)
//
// With RILL_GRPC_CA=ca.crt it connects with grpcs:// and trusts that CA, as a TLS gateway
// needs (docs/security.md); with RILL_CLIENT_OAUTH_URL, RILL_CLIENT_ID,
// RILL_CLIENT_SECRET and RILL_CLIENT_AUDIENCE it authenticates with OAuth.

import { join } from 'node:path'
import { Camunda8 } from '@camunda8/sdk'

const [address, examples] = process.argv.slice(2)

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`ok: ${what}`)
}

const ca = process.env.RILL_GRPC_CA
// With RILL_CLIENT_OAUTH_URL, OAuth client credentials from that token endpoint
// (docs/security.md); no token cache on disk, so no token of an earlier run is reused.
const oauthUrl = process.env.RILL_CLIENT_OAUTH_URL
const auth = oauthUrl
  ? {
      CAMUNDA_AUTH_STRATEGY: 'OAUTH',
      CAMUNDA_OAUTH_URL: oauthUrl,
      ZEEBE_CLIENT_ID: process.env.RILL_CLIENT_ID,
      ZEEBE_CLIENT_SECRET: process.env.RILL_CLIENT_SECRET,
      CAMUNDA_ZEEBE_OAUTH_AUDIENCE: process.env.RILL_CLIENT_AUDIENCE,
      CAMUNDA_TOKEN_DISK_CACHE_DISABLE: true,
    }
  : { CAMUNDA_AUTH_STRATEGY: 'NONE' }
const c8 = new Camunda8({
  ZEEBE_GRPC_ADDRESS: ca ? `grpcs://${address}` : `grpc://${address}`,
  ...(ca ? { CAMUNDA_CUSTOM_ROOT_CERT_PATH: ca } : {}),
  ...auth,
  zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: 'NONE' },
})
const zbc = c8.getZeebeGrpcApiClient()

async function runTwice(label) {
  for (let i = 0; i < 2; i++) {
    const result = await zbc.createProcessInstanceWithResult({
      bpmnProcessId: 'two-rest-calls',
      variables: { steps: 0 },
      requestTimeout: 20000,
      fetchVariables: ['steps'],
    })
    check(
      JSON.stringify(result.variables) === JSON.stringify({ steps: 2 }),
      `${label}: both jobs completed (${JSON.stringify(result.variables)})`
    )
  }
}

async function main() {
  const topology = await zbc.topology()
  check(topology.brokers.length >= 1, 'topology names the brokers')
  check(Number(topology.partitionsCount) >= 1, 'topology counts the partitions')

  const deployed = await zbc.deployResource({
    processFilename: join(examples, 'two-rest-calls.bpmn'),
  })
  check(
    deployed.deployments.some((d) => d.process?.bpmnProcessId === 'two-rest-calls'),
    'deployed two-rest-calls'
  )

  const handler = (job) => job.complete({ steps: Number(job.variables.steps ?? 0) + 1 })

  const worker = zbc.createWorker({
    taskType: 'restCall',
    taskHandler: handler,
    timeout: 30000,
    pollInterval: 300,
  })
  await runTwice('polling worker')
  await worker.close()

  const streamer = await zbc.streamJobs({
    type: 'restCall',
    worker: 'grpc-flow-stream',
    timeout: 30000,
    taskHandler: handler,
  })
  await runTwice('streaming worker')
  streamer.close()

  const dmn = await zbc.deployResource({ decisionFilename: join(examples, 'dish.dmn') })
  const menu = dmn.deployments.find((d) => d.decision?.dmnDecisionId === 'menu')
  check(menu !== undefined, 'deployed the menu decision')
  const evaluated = await zbc.evaluateDecision({
    decisionId: 'menu',
    variables: { month: 1, guestCount: 12 },
  })
  check(
    evaluated.decisionOutput === '"Winter menu: Stew"',
    `evaluated the menu (${evaluated.decisionOutput})`
  )
  check(String(evaluated.decisionKey) === String(menu.decision.decisionKey), 'by its key')
  const season = evaluated.evaluatedDecisions.find((d) => d.decisionId === 'season')
  check(
    season?.matchedRules[0]?.ruleId === 'Season_Rule_4' &&
      season.evaluatedInputs[0]?.inputValue === '1',
    'the evaluated decisions carry their matched rules and inputs'
  )
  const failed = await zbc.evaluateDecision({ decisionId: 'season', variables: { month: 'May' } })
  check(failed.failedDecisionId === 'season', `a failed evaluation names it (${failed.failureMessage})`)

  await zbc.close()
  console.log('all checks passed')
}

const timer = setTimeout(() => {
  console.error('timed out')
  process.exit(1)
}, 120000)
main().then(
  () => {
    clearTimeout(timer)
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
