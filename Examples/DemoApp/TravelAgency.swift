import Foundation
import MobileServices

/// One travel agency of the back end the tutorials' app lists (`TravelAgencies`, the SAP flight model's
/// `RMTSAMPLEFLIGHT.Travelagency`): the app's OData model, not the mobile-services client's.
struct TravelAgency: Sendable, Equatable, Hashable {
    /// The OData entity set: `{base}/{applicationId}/TravelAgencies`.
    static let entitySet = "TravelAgencies"

    /// `agencynum`, e.g. `00000055`.
    var agencyNumber: String
    /// `NAME`.
    var name: String
    /// `STREET`.
    var street: String
    /// `POSTCODE`.
    var postcode: String
    /// `CITY`.
    var city: String
    /// `COUNTRY`.
    var country: String
    /// `TELEPHONE`.
    var telephone: String
    /// `URL`.
    var url: String

    init(
        agencyNumber: String, name: String, street: String = "", postcode: String = "", city: String = "",
        country: String = "", telephone: String = "", url: String = ""
    ) {
        self.agencyNumber = agencyNumber
        self.name = name
        self.street = street
        self.postcode = postcode
        self.city = city
        self.country = country
        self.telephone = telephone
        self.url = url
    }

    /// Reads an OData v2 collection `{"d":{"results":[...]}}` (or `{"d":[...]}`). Each entry needs string
    /// `agencynum` and `NAME`; the other fields default to empty.
    ///
    /// - Throws: ``MobileServicesError/malformedResponse(operation:url:status:detail:)``.
    static func parse(_ data: Data, url: URL) throws -> [TravelAgency] {
        func malformed(_ detail: String) -> MobileServicesError {
            .malformedResponse(operation: .serviceRequest, url: url.absoluteString, status: 200, detail: detail)
        }
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw malformed("the body is not a JSON object")
        }
        let entries: [Any]
        if let d = root["d"] as? [String: Any], let results = d["results"] as? [Any] {
            entries = results
        } else if let results = root["d"] as? [Any] {
            entries = results
        } else {
            throw malformed("no array 'd.results'")
        }
        return try entries.enumerated().map { index, entry in
            guard let object = entry as? [String: Any], let number = object["agencynum"] as? String,
                  let name = object["NAME"] as? String
            else { throw malformed("entry \(index) has no string 'agencynum' and 'NAME'") }
            func field(_ key: String) -> String { object[key] as? String ?? "" }
            return TravelAgency(
                agencyNumber: number, name: name, street: field("STREET"), postcode: field("POSTCODE"),
                city: field("CITY"), country: field("COUNTRY"), telephone: field("TELEPHONE"), url: field("URL"))
        }
    }
}

extension MobileServicesClient {
    /// The back end's travel agencies (`GET {base}/{applicationId}/TravelAgencies`, OData `d.results`).
    func travelAgencies() async throws -> [TravelAgency] {
        let data = try await data(forServicePath: TravelAgency.entitySet)
        return try TravelAgency.parse(data, url: configuration.serviceURL(path: TravelAgency.entitySet))
    }
}
