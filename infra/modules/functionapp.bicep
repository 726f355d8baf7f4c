// The Flex Consumption plan and the Python function app. Every connection is identity-based: the app
// settings hold endpoints and the identity's client id, never a key or a connection string with a secret
// (the Durable Task Scheduler's connection string names its endpoint and the identity, nothing else).
// Flex Consumption sets the runtime in functionAppConfig; it refuses FUNCTIONS_WORKER_RUNTIME and
// FUNCTIONS_EXTENSION_VERSION as app settings.

@description('Name of the function app.')
param name string

@description('Name of the Flex Consumption plan.')
param planName string

@description('Region of both.')
param location string

@description('Tags of both.')
param tags object

@description('azd service name (azure.yaml) this app deploys.')
param serviceName string

@description('Python version.')
param pythonVersion string

@description('Most instances the app scales out to.')
param maximumInstanceCount int

@description('Memory of one instance, in MB.')
param instanceMemoryMB int

@description('Resource id of the user-assigned identity.')
param identityId string

@description('Client id of the user-assigned identity.')
param identityClientId string

@description('URL of the blob container the deployment package goes to.')
param deploymentContainerUrl string

@description('Blob, queue and table endpoints of the AzureWebJobsStorage account.')
param storageEndpoints object

@description('Application Insights connection string (no key: local auth is disabled on the component).')
param applicationInsightsConnectionString string

@description('Azure OpenAI endpoint.')
param openAiEndpoint string

@description('Azure OpenAI chat deployment name.')
param chatDeploymentName string

@description('Durable Functions task hub name.')
param taskHubName string

@description('Default retention of new conversations.')
param retentionMode string

@description('Default byte budget of one conversation.')
param maxStateBytes int

@description('Always-ready instances of the durable group (entity, orchestration and activity triggers); 0 for none.')
param durableAlwaysReadyInstances int

@description('Endpoint of the Durable Task Scheduler the app runs on; empty when it runs on Azure Storage.')
param schedulerEndpoint string

// Flex Consumption scales Durable triggers as one group, `durable`; an always-ready instance there keeps the first
// turn after a quiet spell from waiting for a cold start (the Durable Functions guidance for this plan).
var alwaysReady = durableAlwaysReadyInstances > 0 ? [
  {
    name: 'durable'
    instanceCount: durableAlwaysReadyInstances
  }
] : []

// The state cache's bound for each instance size (docs/scaling.md, "Memory"): the worker shares the instance with the
// Functions host and with the turns running at once.
var stateCacheMBByInstanceMemory = {
  '512': 128
  '2048': 768
  '4096': 1536
}

// The settings of every deployment.
var baseSettings = {
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  AzureWebJobsStorage__blobServiceUri: storageEndpoints.blob
  AzureWebJobsStorage__queueServiceUri: storageEndpoints.queue
  AzureWebJobsStorage__tableServiceUri: storageEndpoints.table
  APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsightsConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
  AZURE_CLIENT_ID: identityClientId
  AZURE_OPENAI_ENDPOINT: openAiEndpoint
  AZURE_OPENAI_CHAT_MODEL: chatDeploymentName
  TASKHUB_NAME: taskHubName
  AGENT_HOST_RETENTION_MODE: retentionMode
  AGENT_HOST_MAX_STATE_BYTES: string(maxStateBytes)
  // A failed turn's error names the exception's type only; why it failed stays in the logs (Application Insights).
  AGENT_HOST_TURN_ERROR_DETAILS: '0'
  AGENT_HOST_STATE_CACHE_MB: string(stateCacheMBByInstanceMemory[string(instanceMemoryMB)])
  // The template serves HTTP streams (function_app.py, http_streams=True): the Python worker must index at start.
  PYTHON_ENABLE_INIT_INDEXING: '1'
}

// The scheduler connection, identity-based (endpoint, managed identity, its client id). The deployed host.json names
// this setting (storageProvider.connectionStringName) when infra/hooks/durable_backend.py packages the app for it.
var schedulerSettings = {
  DURABLE_TASK_SCHEDULER_CONNECTION_STRING: 'Endpoint=${schedulerEndpoint};Authentication=ManagedIdentity;ClientID=${identityClientId}'
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: {
    reserved: true
  }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': serviceName })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      minTlsVersion: '1.2'
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
        alwaysReady: alwaysReady
      }
      runtime: {
        name: 'python'
        version: pythonVersion
      }
    }
  }

  resource appSettings 'config' = {
    name: 'appsettings'
    properties: empty(schedulerEndpoint) ? baseSettings : union(baseSettings, schedulerSettings)
  }
}

output name string = site.name
output url string = 'https://${site.properties.defaultHostName}'
