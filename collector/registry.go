package collector

// Factories lists every collector jobscope has, in the order --help shows
// them. A collector joins by adding its factory function here.
func Factories() []Factory {
	return []Factory{
		CgroupFactory(),
		ProcessFactory(),
		EBPFFactory(),
		SlurmJobsFactory(),
		SlurmNodesFactory(),
		SlurmFairshareFactory(),
		SlurmSchedulerFactory(),
		SlurmCommandsFactory(),
		SlurmSacctFactory(),
		GPUFactory(),
		PowerFactory(),
	}
}
