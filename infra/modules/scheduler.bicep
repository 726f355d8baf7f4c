// The Durable Task Scheduler backend: a scheduler, the app's task hub in it, and the Durable Task Data Contributor
// role on that task hub for the app identity (and optionally a developer, for the dashboard). The scheduler has no
// keys: callers sign in with Entra ID, and the app's connection string names only the endpoint and its identity.

@description('Name of the scheduler: 3-64 letters, digits and hyphens.')
param name string

@description('Region of the scheduler.')
param location string

@description('Tags of the scheduler.')
param tags object

@description('Name of the task hub; host.json finds it through TASKHUB_NAME, so it is the same name.')
param taskHubName string

@description('Billing SKU: Consumption (pay per action, up to 500 actions a second) or Dedicated (capacity units).')
param skuName string

@description('Capacity units of a Dedicated scheduler (1-3; 3 for high availability); unused for Consumption.')
param capacity int

@description('IP ranges that may reach the scheduler; an empty list lets nothing in.')
param ipAllowlist array

@description('Principal (the app identity) given Durable Task Data Contributor on the task hub.')
param appPrincipalId string

@description('Object id of a user who may also use the task hub and its dashboard; empty for none.')
param developerPrincipalId string

var durableTaskDataContributor = '0ad04412-c4d5-4796-b79c-f76d14c8d402'
// Capacity is a Dedicated setting; a Consumption scheduler is sent its SKU name alone.
var sku = skuName == 'Dedicated' ? {
  name: skuName
  capacity: capacity
} : {
  name: skuName
}

resource scheduler 'Microsoft.DurableTask/schedulers@2025-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    ipAllowlist: ipAllowlist
    sku: sku
  }
}

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2025-11-01' = {
  parent: scheduler
  name: taskHubName
  properties: {}
}

// On the task hub, not the scheduler: a role on the scheduler would open every task hub it will ever hold.
resource appRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(taskHub.id, appPrincipalId, durableTaskDataContributor)
  scope: taskHub
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', durableTaskDataContributor)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource developerRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(developerPrincipalId)) {
  name: guid(taskHub.id, developerPrincipalId, durableTaskDataContributor)
  scope: taskHub
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', durableTaskDataContributor)
    principalId: developerPrincipalId
    principalType: 'User'
  }
}

output endpoint string = scheduler.properties.endpoint
output dashboardUrl string = taskHub.properties.dashboardUrl
