// The standalone worker on Azure Container Apps: `python -m agent_host worker` in a container app, its task hub on
// the Durable Task Scheduler, signing in to the scheduler (and Azure OpenAI) with a user-assigned managed identity.
// No key is created or stored but the HTTP API's own (AGENT_HOST_API_KEY), kept as a container app secret.
// Deployed into an existing resource group that holds the container registry the image was pushed to (README.md).
targetScope = 'resourceGroup'

@description('Region of every resource except the Azure OpenAI account.')
param location string = resourceGroup().location

@description('Name of an existing container registry in this resource group that holds the image.')
param registryName string

@description('The worker image in that registry, as repository:tag (README.md builds it).')
param image string = 'agent-host-worker:1'

@secure()
@description('The HTTP API key: clients send it as Authorization: Bearer <key>. Kept as a container app secret.')
param apiKey string

@description('Task hub of the scheduler: 3-45 letters and digits, starting with a letter.')
@minLength(3)
@maxLength(45)
param taskHubName string = 'agenthost'

@description('Deploy an Azure OpenAI account and chat model for the agent; false runs the offline model.')
param useAzureOpenAi bool = true

@description('Region of the Azure OpenAI account (the model must be offered there); defaults to location.')
param openAiLocation string = ''

@description('Model to deploy for chat.')
param chatModelName string = 'gpt-4.1-mini'

@description('Version of the chat model.')
param chatModelVersion string = '2025-04-14'

@description('Most replicas the app scales out to; every replica is a worker on the same task hub.')
@minValue(1)
@maxValue(30)
param maxReplicas int = 3

var resourceToken = toLower(uniqueString(resourceGroup().id, location))
var tags = {
  sample: 'agent-host-container-apps-dts'
}
// The port the image's ENTRYPOINT serves on (Dockerfile: --port 8000).
var port = 8000
var chatDeploymentName = 'chat'
var apiKeySecret = 'agent-host-api-key'
var acrPull = '7f951dda-4ed3-4680-a7ca-43fe172d538d'

module identity '../../infra/modules/identity.bicep' = {
  name: 'identity'
  params: {
    name: 'id-${resourceToken}'
    location: location
    tags: tags
  }
}

// The scheduler, its task hub, and the Durable Task Data Contributor role on the task hub for the identity.
module scheduler '../../infra/modules/scheduler.bicep' = {
  name: 'scheduler'
  params: {
    name: 'dts-${resourceToken}'
    location: location
    tags: tags
    taskHubName: taskHubName
    skuName: 'Consumption'
    capacity: 1
    // Container Apps on the Consumption plan have no fixed outbound address; every call still needs the role.
    ipAllowlist: [
      '0.0.0.0/0'
    ]
    appPrincipalId: identity.outputs.principalId
    developerPrincipalId: ''
  }
}

module openAi '../../infra/modules/openai.bicep' = if (useAzureOpenAi) {
  name: 'openai'
  params: {
    name: 'oai-${resourceToken}'
    location: empty(openAiLocation) ? location : openAiLocation
    tags: tags
    chatModelName: chatModelName
    chatModelVersion: chatModelVersion
    chatDeploymentName: chatDeploymentName
    chatDeploymentType: 'GlobalStandard'
    chatDeploymentCapacity: 30
    appPrincipalId: identity.outputs.principalId
    developerPrincipalId: ''
  }
}

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' existing = {
  name: registryName
}

// The app pulls its image with the identity too: no registry password. (A role assignment's name must be known when
// the deployment starts, so it derives from the identity's name, not from its principal id.)
resource registryPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(registry.id, 'id-${resourceToken}', acrPull)
  scope: registry
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPull)
    principalId: identity.outputs.principalId
    principalType: 'ServicePrincipal'
  }
}

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: 'cae-${resourceToken}'
  location: location
  tags: tags
  properties: {
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
  }
}

resource app 'Microsoft.App/containerApps@2024-03-01' = {
  name: 'ca-${resourceToken}'
  location: location
  tags: tags
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.outputs.id}': {}
    }
  }
  properties: {
    environmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      ingress: {
        external: true
        targetPort: port
        transport: 'auto'
        allowInsecure: false
      }
      registries: [
        {
          server: registry.properties.loginServer
          identity: identity.outputs.id
        }
      ]
      secrets: [
        {
          name: apiKeySecret
          value: apiKey
        }
      ]
    }
    template: {
      containers: [
        {
          name: 'worker'
          image: '${registry.properties.loginServer}/${image}'
          // Appended to the image's ENTRYPOINT (python -m agent_host worker --app agents:agent ...).
          args: [
            '--scheduler'
            scheduler.outputs.endpoint
            '--taskhub'
            taskHubName
          ]
          env: [
            {
              // DefaultAzureCredential signs in as this user-assigned identity (scheduler, Azure OpenAI).
              name: 'AZURE_CLIENT_ID'
              value: identity.outputs.clientId
            }
            {
              name: 'AGENT_HOST_API_KEY'
              secretRef: apiKeySecret
            }
            {
              // Empty: the offline model answers.
              name: 'AZURE_OPENAI_ENDPOINT'
              value: useAzureOpenAi ? openAi.outputs.endpoint : ''
            }
            {
              name: 'AZURE_OPENAI_CHAT_MODEL'
              value: useAzureOpenAi ? openAi.outputs.chatDeploymentName : ''
            }
          ]
          resources: {
            cpu: json('1.0')
            memory: '2Gi'
          }
          probes: [
            {
              type: 'Liveness'
              httpGet: {
                path: '/api/health'
                port: port
              }
            }
            {
              type: 'Readiness'
              httpGet: {
                path: '/api/health'
                port: port
              }
            }
          ]
        }
      ]
      // At least one replica, always: the worker takes the conversations' operations from the task hub, which a
      // replica scaled to zero would leave queued until the next HTTP request woke one.
      scale: {
        minReplicas: 1
        maxReplicas: maxReplicas
      }
    }
  }
  dependsOn: [
    registryPull
  ]
}

output appName string = app.name
output url string = 'https://${app.properties.configuration.ingress.fqdn}'
output schedulerEndpoint string = scheduler.outputs.endpoint
output dashboardUrl string = scheduler.outputs.dashboardUrl
output taskHubName string = taskHubName
