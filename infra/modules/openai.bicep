// The Azure OpenAI account and its chat deployment. Key authentication is disabled: callers sign in with
// Entra ID and need the Cognitive Services OpenAI User role, given here to the app identity (and optionally
// to a developer, to run the app locally against the same deployment).

@description('Name of the account; also its custom subdomain, which Entra ID sign-in needs.')
param name string

@description('Region of the account.')
param location string

@description('Tags of the account.')
param tags object

@description('Model to deploy.')
param chatModelName string

@description('Version of the model.')
param chatModelVersion string

@description('Name of the deployment, which callers use as the model name.')
param chatDeploymentName string

@description('Deployment type (SKU) of the model.')
param chatDeploymentType string

@description('Capacity, in thousands of tokens per minute.')
param chatDeploymentCapacity int

@description('Principal of the app identity.')
param appPrincipalId string

@description('Object id of a user who may also call the model; empty for none.')
param developerPrincipalId string

var openAiUser = '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd' // Cognitive Services OpenAI User

resource account 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: name
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: {
    name: 'S0'
  }
  properties: {
    customSubDomainName: name
    publicNetworkAccess: 'Enabled'
    disableLocalAuth: true
  }
}

resource chatDeployment 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = {
  parent: account
  name: chatDeploymentName
  sku: {
    name: chatDeploymentType
    capacity: chatDeploymentCapacity
  }
  properties: {
    model: {
      format: 'OpenAI'
      name: chatModelName
      version: chatModelVersion
    }
  }
}

resource appRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(account.id, appPrincipalId, openAiUser)
  scope: account
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', openAiUser)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource developerRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(developerPrincipalId)) {
  name: guid(account.id, developerPrincipalId, openAiUser)
  scope: account
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', openAiUser)
    principalId: developerPrincipalId
    principalType: 'User'
  }
}

output endpoint string = account.properties.endpoint
output chatDeploymentName string = chatDeployment.name
