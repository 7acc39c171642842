package tablekit

// ParseTransactionError is parseTransactionError, for the package's
// external tests.
var ParseTransactionError = parseTransactionError
