import Foundation

/// Where flows' blocking reads and writes wait (`readData`, `write`, `readDatagrams`): a queue of
/// its own, whose threads the system adds as calls block. Dispatch's global queue keeps about one
/// thread per core, so a few flows waiting for their apps would hold up every other flow's call.
enum FlowIO {
    static let queue = DispatchQueue(label: "netext-flow-io", attributes: .concurrent)
}
