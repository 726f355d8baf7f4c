// The storage account behind AzureWebJobsStorage (Durable Functions keeps entity state, queues and history
// there) and the container Flex Consumption deploys the app package from. Shared keys are disabled: the app
// identity gets data-plane roles instead.

@description('Name of the storage account (3-24 lower-case letters and digits).')
param name string

@description('Region of the account.')
param location string

@description('Tags of the account.')
param tags object

@description('Blob container the deployment package is uploaded to.')
param deploymentContainerName string

@description('Principal (the app identity) given blob, queue and table data roles.')
param dataPrincipalId string

var dataRoles = [
  'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
]

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    minimumTlsVersion: 'TLS1_2'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
}

resource dataRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in dataRoles: {
    name: guid(account.id, dataPrincipalId, role)
    scope: account
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
      principalId: dataPrincipalId
      principalType: 'ServicePrincipal'
    }
  }
]

output deploymentContainerUrl string = '${account.properties.primaryEndpoints.blob}${deploymentContainer.name}'
output endpoints object = {
  blob: account.properties.primaryEndpoints.blob
  queue: account.properties.primaryEndpoints.queue
  table: account.properties.primaryEndpoints.table
}
