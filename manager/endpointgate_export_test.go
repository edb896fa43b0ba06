package manager

// KubeadmConfigUploaded is kubeadmConfigUploaded, for the tests against the test API server
// (package manager_test).
var KubeadmConfigUploaded = kubeadmConfigUploaded
