module github.com/stepcost/stepcost

go 1.26

require (
	go.yaml.in/yaml/v2 v2.4.2
	sigs.k8s.io/yaml v1.6.0
)
