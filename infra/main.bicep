// agent-host on Azure: a Flex Consumption function app that signs in to storage, Azure OpenAI and (when chosen)
// the Durable Task Scheduler with a user-assigned managed identity. No keys are created for, or stored in, the
// app's settings. `durableBackend` (azd: DURABLE_BACKEND) picks where Durable Functions keeps the conversations.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; names and tags derive from it.')
param environmentName string

@minLength(1)
@description('Region of every resource except the Azure OpenAI account.')
param location string

@description('Region of the Azure OpenAI account (the model must be offered there); defaults to location.')
param openAiLocation string = ''

@description('Model to deploy for chat.')
param chatModelName string = 'gpt-4.1-mini'

@description('Version of the chat model.')
param chatModelVersion string = '2025-04-14'

@description('Deployment type of the chat model.')
@allowed([
  'GlobalStandard'
  'Standard'
  'DataZoneStandard'
])
param chatDeploymentType string = 'GlobalStandard'

@description('Name of the chat deployment; the app calls the model by this name (AZURE_OPENAI_CHAT_MODEL).')
param chatDeploymentName string = 'chat'

@description('Capacity of the chat deployment, in thousands of tokens per minute.')
@minValue(1)
param chatDeploymentCapacity int = 30

@description('Python version of the function app.')
@allowed([
  '3.11'
  '3.12'
  '3.13'
])
param pythonVersion string = '3.11'

@description('Durable Functions task hub: 3-45 letters and digits, starting with a letter; one per app and environment.')
@minLength(3)
@maxLength(45)
param taskHubName string = 'agenthost'

@description('Default retention of new conversations (AGENT_HOST_RETENTION_MODE).')
@allowed([
  'auto'
  'keep_all'
  'follow_compaction'
])
param retentionMode string = 'auto'

@description('Default byte budget of one conversation (AGENT_HOST_MAX_STATE_BYTES). 600 KiB leaves a turn room under the 1 MB cap of the Durable Task Scheduler (docs/scaling.md).')
@minValue(65536)
@maxValue(983040)
param maxStateBytes int = 614400

@description('Durable Functions backend: azureStorage (the storage account) or durableTaskScheduler (a managed scheduler). The azd prepackage hook deploys the matching host.json.')
@allowed([
  'azureStorage'
  'durableTaskScheduler'
])
param durableBackend string = 'azureStorage'

@description('Billing SKU of the Durable Task Scheduler (durableTaskScheduler backend only).')
@allowed([
  'Consumption'
  'Dedicated'
])
param durableTaskSchedulerSku string = 'Consumption'

@description('Capacity units of a Dedicated scheduler: 1-3, and 3 for high availability.')
@minValue(1)
@maxValue(3)
param durableTaskSchedulerCapacity int = 1

@description('Region of the Durable Task Scheduler; defaults to location (the same region keeps the app close to it).')
param durableTaskSchedulerLocation string = ''

@description('IP ranges that may reach the scheduler. Flex Consumption has no fixed outbound address, so all by default; every call still needs the Durable Task Data Contributor role.')
param durableTaskSchedulerIpAllowlist array = [
  '0.0.0.0/0'
]

@description('Always-ready instances of the Flex Consumption durable group (entity triggers); 0 lets it scale to zero.')
@minValue(0)
param durableAlwaysReadyInstances int = 1

@description('Most instances the app scales out to.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 100

@description('Memory of one instance, in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Object id of a user or group that may also call the model (to run the app locally against it); empty for none.')
param principalId string = ''

var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = {
  'azd-env-name': environmentName
}
var useScheduler = durableBackend == 'durableTaskScheduler'

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: 'id-${resourceToken}'
    location: location
    tags: tags
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: 'log-${resourceToken}'
    applicationInsightsName: 'appi-${resourceToken}'
    location: location
    tags: tags
    publisherPrincipalId: identity.outputs.principalId
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: 'st${resourceToken}'
    location: location
    tags: tags
    deploymentContainerName: 'app-package'
    dataPrincipalId: identity.outputs.principalId
  }
}

module openAi 'modules/openai.bicep' = {
  name: 'openai'
  scope: rg
  params: {
    name: 'oai-${resourceToken}'
    location: empty(openAiLocation) ? location : openAiLocation
    tags: tags
    chatModelName: chatModelName
    chatModelVersion: chatModelVersion
    chatDeploymentName: chatDeploymentName
    chatDeploymentType: chatDeploymentType
    chatDeploymentCapacity: chatDeploymentCapacity
    appPrincipalId: identity.outputs.principalId
    developerPrincipalId: principalId
  }
}

module scheduler 'modules/scheduler.bicep' = if (useScheduler) {
  name: 'scheduler'
  scope: rg
  params: {
    name: 'dts-${resourceToken}'
    location: empty(durableTaskSchedulerLocation) ? location : durableTaskSchedulerLocation
    tags: tags
    taskHubName: taskHubName
    skuName: durableTaskSchedulerSku
    capacity: durableTaskSchedulerCapacity
    ipAllowlist: durableTaskSchedulerIpAllowlist
    appPrincipalId: identity.outputs.principalId
    developerPrincipalId: principalId
  }
}

module functionApp 'modules/functionapp.bicep' = {
  name: 'functionapp'
  scope: rg
  params: {
    name: 'func-${resourceToken}'
    planName: 'plan-${resourceToken}'
    location: location
    tags: tags
    serviceName: 'api'
    pythonVersion: pythonVersion
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    storageEndpoints: storage.outputs.endpoints
    applicationInsightsConnectionString: monitoring.outputs.connectionString
    openAiEndpoint: openAi.outputs.endpoint
    chatDeploymentName: openAi.outputs.chatDeploymentName
    taskHubName: taskHubName
    retentionMode: retentionMode
    maxStateBytes: maxStateBytes
    durableAlwaysReadyInstances: durableAlwaysReadyInstances
    schedulerEndpoint: useScheduler ? scheduler.outputs.endpoint : ''
  }
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = functionApp.outputs.name
output AZURE_FUNCTION_URL string = functionApp.outputs.url
output AZURE_OPENAI_ENDPOINT string = openAi.outputs.endpoint
output AZURE_OPENAI_CHAT_MODEL string = openAi.outputs.chatDeploymentName
output TASKHUB_NAME string = taskHubName
output DURABLE_BACKEND string = durableBackend
output DURABLE_TASK_SCHEDULER_ENDPOINT string = useScheduler ? scheduler.outputs.endpoint : ''
output DURABLE_TASK_SCHEDULER_DASHBOARD_URL string = useScheduler ? scheduler.outputs.dashboardUrl : ''
