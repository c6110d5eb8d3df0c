package collector

// Factories lists every collector jobscope has, in the order --help shows
// them. A collector joins by adding its factory function here.
func Factories() []Factory {
	return []Factory{
		CgroupFactory(),
		EBPFFactory(),
		ProcessFactory(),
		GPUFactory(),
		PowerFactory(),
		SlurmJobsFactory(), SlurmNodesFactory(), SlurmFairshareFactory(), SlurmSchedulerFactory(), SlurmCommandsFactory(), SlurmSacctFactory(),
		SlurmNodeFactory(), SlurmQueueWaitFactory(), SlurmReservationsFactory(), SlurmLicensesFactory(),
	}
}
