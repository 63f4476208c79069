// The user's background transfer service for NetExtHTTP background sessions
// (URLSessionConfiguration.background(withIdentifier:)): apps start it on demand; see
// docs/background-transfers.md.
import BackgroundTransfers
import Foundation
import NetExt

ProviderExecutable.answerInformationalArguments(name: "netext-transferd", usage: TransferDaemon.usage)
let options: TransferDaemon.Options
do {
    options = try TransferDaemon.options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("netext-transferd: \(error)\n".utf8))
    exit(2)
}
exit(await TransferDaemon.run(options))
