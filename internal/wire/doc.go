// Package wire converts between the API's messages (package stepcostv1) and the
// domain (estimator, planner): requests resolved into models, clusters, training
// and layouts with their field errors named as the API names them, and results
// turned into responses. The daemon's service and the CLI both answer through it,
// so that an answer is the same whichever of them computed it.
package wire
