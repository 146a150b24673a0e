//! Which backend keeps a workspace's environments.

use super::EnvironmentBackend;
use crate::environments::Environments;

impl Environments {
    /// The backend this workspace's environments are kept by.
    pub(crate) fn backend(&self) -> Box<dyn EnvironmentBackend + '_> {
        match self.branches {
            Some(_) => Box::new(super::nessie::OnBranches(self)),
            None => Box::new(super::pins::Pins(self)),
        }
    }
}
