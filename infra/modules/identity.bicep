// The user-assigned managed identity the function app uses for storage, Azure OpenAI and Application Insights.

@description('Name of the identity.')
param name string

@description('Region of the identity.')
param location string

@description('Tags of the identity.')
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output clientId string = identity.properties.clientId
output principalId string = identity.properties.principalId
