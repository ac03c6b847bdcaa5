// Package wire converts between the API's messages (package stepcostv1) and the
// domain (estimator, planner): requests resolved into models, clusters, training
// and layouts with their field errors named as the API names them (once, before
// anything runs), and results turned into responses. It runs no estimate or
// search itself: the service core (internal/service), which the daemon and the
// CLI both call, takes a resolved request to the planner or the estimator and
// brings the result back here to be converted, so that an answer is the same
// whichever of them computed it.
package wire
