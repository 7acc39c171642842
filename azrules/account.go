package azrules

// The development account: the well-known name and key that Azurite and
// Azure's own storage emulators accept, and that the connection string
// UseDevelopmentStorage=true stands for. They are public and work only
// against an emulator.
//
// Evidence (docs): "Use the Azurite emulator for local Azure Storage
// development", section "Well-known storage account and key".
const (
	// DevAccountName is the development account's name.
	DevAccountName = "devstoreaccount1"
	// DevAccountKey is the development account's key (base64).
	DevAccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// The ports the emulators listen on by default, which Storage Explorer
// and UseDevelopmentStorage=true assume.
//
// Evidence (docs): the Azurite page's command-line options (--blobPort
// 10000, --queuePort 10001, --tablePort 10002) and "Configure Azure
// Storage connection strings", section "Connect to the emulator account".
const (
	// DefaultBlobPort is the Blob service's default port.
	DefaultBlobPort = 10000
	// DefaultQueuePort is the Queue service's default port.
	DefaultQueuePort = 10001
	// DefaultTablePort is the Table service's default port.
	DefaultTablePort = 10002
)
