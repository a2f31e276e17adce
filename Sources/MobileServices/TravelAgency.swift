import Foundation

/// One travel agency of the back end the seeds' app lists (`TravelAgencies`, the SAP flight model's
/// `RMTSAMPLEFLIGHT.Travelagency`).
public struct TravelAgency: Sendable, Equatable, Hashable {
    /// The OData entity set: `{base}/{appId}/TravelAgencies`.
    public static let entitySet = "TravelAgencies"

    /// `agencynum`, e.g. `00000055`.
    public var agencyNumber: String
    /// `NAME`.
    public var name: String
    /// `STREET`.
    public var street: String
    /// `POSTCODE`.
    public var postcode: String
    /// `CITY`.
    public var city: String
    /// `COUNTRY`.
    public var country: String
    /// `TELEPHONE`.
    public var telephone: String
    /// `URL`.
    public var url: String

    public init(
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
    public static func parse(_ data: Data, url: URL) throws -> [TravelAgency] {
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
