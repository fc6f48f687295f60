package compose

// WithoutAction exposes withoutAction to the package's external tests.
var WithoutAction = withoutAction
