package tablekit
import (
 _ "github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
 _ "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
 _ "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
 _ "github.com/Azure/azure-sdk-for-go/sdk/azcore"
)
